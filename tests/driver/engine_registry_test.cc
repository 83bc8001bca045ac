// Engines registered by name (core/exec/engine_registry.h): one registration makes an engine a
// valid `simulate.engine`, lists it in the generated reference, and lets the driver run it.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/exec/analytic_executor.h"
#include "core/exec/engine_registry.h"
#include "core/scenario/reference.h"
#include "driver/predict.h"

namespace dtsim {
namespace {

// A trivial engine: every op takes exactly one millisecond, one after another on each stream,
// ignoring the cluster. Its step time is therefore the longest stream's op count in ms.
class OneMillisecondPerOp : public Executor {
 public:
  std::string name() const override { return "one-ms-per-op"; }
  Trace run(const Job& job, const Cluster&, const RunOptions& options) override {
    ++runs;
    Trace t;
    t.engine = name();
    t.iterations = options.iterations;
    double longest = 0;
    for (const auto& p : job.programs)
      for (size_t s = 0; s < p.streams.size(); ++s) {
        double clock = 0;
        for (size_t i = 0; i < p.streams[s].ops.size(); ++i) {
          t.spans.push_back(Span{p.rank, static_cast<StreamId>(s), 0, i, SpanKind::kCompute,
                                 Seconds(clock), Seconds(clock + 1e-3)});
          clock += 1e-3;
        }
        longest = std::max(longest, clock);
      }
    for (const auto& p : job.programs) t.memory.push_back(RankMemory{p.rank, Bytes(0), {}});
    t.iteration_end.push_back(Seconds(longest));
    return t;
  }
  static inline int runs = 0;
};

const bool kRegistered = register_engine({"one-ms-per-op", "test engine: every op takes 1 ms",
                                          [](const EngineSettings&) -> std::unique_ptr<Executor> {
                                            return std::make_unique<OneMillisecondPerOp>();
                                          }});

constexpr const char* kScenario = R"(
name: registry
cluster: {gpu: A100-SXM-80GB, nodes: 1, gpus_per_node: 2}
model: {preset: gpt3-125m}
training: {global_batch_size: 4, micro_batch_size: 2}
)";

TEST(EngineRegistry, ARegisteredEngineIsAChoiceEverywhereAndRunsThroughTheDriver) {
  ASSERT_TRUE(kRegistered);
  const auto names = engine_choices();
  EXPECT_NE(std::find(names.begin(), names.end(), "one-ms-per-op"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "analytic"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "simgrid"), names.end());
  EXPECT_NE(render_scenario_reference_markdown().find("one-ms-per-op"), std::string::npos);

  const Scenario s =
      load_scenario_text(kScenario, "registry.yaml", {{"simulate.engine=one-ms-per-op"}});
  EXPECT_EQ(s.simulate.engine, "one-ms-per-op");
  const int before = OneMillisecondPerOp::runs;
  const driver::Prediction p = driver::predict(s);
  EXPECT_EQ(OneMillisecondPerOp::runs, before + 1);
  EXPECT_EQ(p.results.engine, "one-ms-per-op");
  size_t longest = 0;
  for (const auto& prog : p.job.programs)
    for (const auto& st : prog.streams) longest = std::max(longest, st.ops.size());
  ASSERT_GT(longest, 0u);
  EXPECT_NEAR(p.results.step_time_s, 1e-3 * static_cast<double>(longest), 1e-12);
}

TEST(EngineRegistry, AnUnregisteredEngineIsBadInputNamingTheRegisteredOnes) {
  try {
    load_scenario_text(kScenario, "registry.yaml", {{"simulate.engine=nonexistent"}});
    FAIL() << "an unknown engine was accepted";
  } catch (const InputError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("simulate.engine"), std::string::npos) << text;
    EXPECT_NE(text.find("analytic"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace dtsim
