// The bypass of SimGrid 3.32's per-completion list walk (sim/maestro_activities.h): it engages on
// the SimGrid dtsim builds against, and it changes no simulated time.
#include "sim/maestro_activities.h"
#include "tests/sim/in_child.h"

#include <gtest/gtest.h>

#include <simgrid/version.h>
#include <cstdlib>
#include <simgrid/s4u.hpp>

#include "sim_fixtures.h"

namespace dtsim::testing {
namespace {

namespace sg4 = simgrid::s4u;

TEST(MaestroActivities, AdoptsCommsAndExecsAndKeepsTheirTimes) {
  in_child_process([&] {
    int argc = 2;
    char arg0[] = "test";
    char arg1[] = "--log=root.thres:critical";
    char* argv[] = {arg0, arg1, nullptr};
    sg4::Engine engine(&argc, argv);
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/TCP-gamma:0");
    sim::MaestroActivities maestro;
#if SIMGRID_VERSION_MAJOR == 3 && SIMGRID_VERSION_MINOR == 32
    ASSERT_TRUE(maestro.active()) << "the bypass no longer finds maestro's activity list";
#endif
    auto* zone = sg4::create_star_zone("star");
    std::vector<sg4::Host*> hosts;
    for (int i = 0; i < 3; ++i) {
      auto* h = zone->create_host("h" + std::to_string(i), 1e9);
      auto* link = zone->create_split_duplex_link("l" + std::to_string(i), 1e9);
      link->set_latency(1e-5);
      link->seal();
      zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr,
                      {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::UP)}, true);
      hosts.push_back(h);
    }
    zone->seal();

    std::map<const sg4::Activity*, sim::MaestroActivities::Handle> handles;
    std::map<const sg4::Activity*, double> finished;
    sg4::Activity::on_completion_cb([&](sg4::Activity const& a) {
      finished[&a] = sg4::Engine::get_clock();
      auto it = handles.find(&a);
      if (it != handles.end()) maestro.release(it->second);
    });
    // Two comms share h0's uplink (each gets half of it), a third is alone, and one exec.
    std::vector<sg4::ActivityPtr> acts;
    const std::pair<int, int> pairs[] = {{0, 1}, {0, 2}, {1, 2}};
    for (auto [a, b] : pairs) {
      sg4::CommPtr c = sg4::Comm::sendto_init(hosts[a], hosts[b]);
      handles[c.get()] = maestro.adopt(*c);
      c->set_payload_size(1000000000);
      c->start();
      acts.push_back(c);
    }
    sg4::ExecPtr e = sg4::Exec::init();
    handles[e.get()] = maestro.adopt(*e);
    e->set_flops_amount(5e8)->set_host(hosts[2]);
    e->start();
    acts.push_back(e);
    if (maestro.active()) {
      EXPECT_EQ(maestro.adopted(), 4u);
    }
    engine.run();

    ASSERT_EQ(finished.size(), 4u);
    EXPECT_DOUBLE_EQ(finished[acts[0].get()], 2.0 + 2e-5);
    EXPECT_DOUBLE_EQ(finished[acts[1].get()], 2.0 + 2e-5);
    // h1->h2 shares h2's downlink with h0->h2 (half each) until h0->h2 ends: also 2 s.
    EXPECT_DOUBLE_EQ(finished[acts[2].get()], 2.0 + 2e-5);
    EXPECT_DOUBLE_EQ(finished[acts[3].get()], 0.5);
  });
}

// The same collectives with and without the bypass give bit-identical traces, at both fidelities,
// with two groups contending for the same NICs and uplinks.
TEST(MaestroActivities, ChangesNoSimulatedTime) {
  const Cluster c = cluster_from(
      "cluster:\n  nodes: 8\n  gpus_per_node: 8\n  gpu: H100-SXM\n"
      "  network: {preset: ib-ndr, topology: fat-tree, nodes_per_leaf: 2, oversubscription: 2}\n");
  std::vector<Rank> even, odd;
  for (Rank r = 0; r < 64; ++r) (r % 2 == 0 ? even : odd).push_back(r);
  for (auto algorithm : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kHierarchical}) {
    const Job job =
        concurrent_collectives({even, odd}, Bytes(64e6), 64, CollectiveKind::kAllReduce, algorithm);
    for (const char* fidelity : {"chunk", "collective"}) {
      auto run = [&](const char* bypass) {
        ::setenv("DTSIM_SIMGRID_BYPASS", bypass, 1);
        Trace t = sim::SimGridExecutor(
                      sim::SimGridOptions{kFidelitySettingNames.from_valid(fidelity), DType::kBf16})
                      .run(job, c, RunOptions{});
        ::unsetenv("DTSIM_SIMGRID_BYPASS");
        return t;
      };
      const Trace with = run("1"), without = run("0");
      ASSERT_EQ(with.spans.size(), without.spans.size());
      ASSERT_FALSE(with.spans.empty());
      for (size_t i = 0; i < with.spans.size(); ++i) {
        EXPECT_EQ(with.spans[i].start.value(), without.spans[i].start.value()) << fidelity << i;
        EXPECT_EQ(with.spans[i].end.value(), without.spans[i].end.value()) << fidelity << i;
      }
    }
  }
}

}  // namespace
}  // namespace dtsim::testing
