// A fixture for tests/layering/check_topology.py: one stage that tests the topology in two
// functions, which the checker must report with both names.
namespace fixture {
double hop_latency(const Cluster& c) { return c.is_torus() ? 2.0 : 1.0; }
bool shares(const ClusterConfig& c) { return c.network.topology == Topology::kDragonfly; }
}  // namespace fixture
