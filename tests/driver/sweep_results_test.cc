// The sweep's configurations and its results file: --vary and --grid parsing, shards, and rows
// that survive a round trip through CSV and JSON Lines with every result key.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <set>

#include "core/base/error.h"
#include "core/report/report.h"
#include "driver/predict.h"
#include "driver/sweep.h"
#include "driver/sweep_results.h"
#include "tests/support/scratch_dir.h"

namespace dtsim::driver {
namespace {

// A file in the test's scratch folder.
std::string temp_path(const std::string& name) {
  return dtsim::testing::scratch_dir().file(name);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SweepVary, ListsAndInclusiveRanges) {
  EXPECT_EQ(parse_vary("cluster.nodes=1, 2,4", 1).values,
            (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(parse_vary("cluster.nodes=range(8,32,8)", 1).values,
            (std::vector<std::string>{"8", "16", "24", "32"}));
  EXPECT_EQ(parse_vary("cluster.nodes=range(4,1,-1)", 1).values,
            (std::vector<std::string>{"4", "3", "2", "1"}));
  // b not on the grid: the last value below it.
  EXPECT_EQ(parse_vary("cluster.nodes=range(1,6,2)", 1).values,
            (std::vector<std::string>{"1", "3", "5"}));
  // An alias is stored under its key.
  EXPECT_EQ(parse_vary("parallelism.tp=1,2", 1).key, "parallelism.tensor");
  // Values with units are checked as --set checks them.
  EXPECT_EQ(parse_vary("cluster.network.nic_bandwidth=100Gbps,400Gbps", 1).values.size(), 2u);
}

TEST(SweepVary, BadInputIsRefused) {
  EXPECT_NE(message_of([] { parse_vary("cluster.nodez=1,2", 1); }).find("did you mean"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_vary("cluster.nodes=range(4,1,1)", 1); }).find("is empty"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_vary("cluster.nodes=range(1,4,0)", 1); }).find("must not be 0"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_vary("cluster.nodes=range(1,4)", 1); }).find("three numbers"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_vary("cluster.nodes=", 1); }).find("no values"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_vary("cluster.nodes=1,1", 1); }).find("twice"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_vary("cluster.network.nic_bandwidth=100", 1); }), "");
  EXPECT_NE(message_of([] { parse_vary("nodes", 1); }).find("expected --vary"), std::string::npos);
}

TEST(SweepVary, CartesianProductFirstAxisOutermost) {
  const auto configs = expand_axes({{"a.x", {"1", "2"}}, {"b.y", {"p", "q", "r"}}});
  ASSERT_EQ(configs.size(), 6u);
  EXPECT_EQ(config_id(configs[0]), "a.x=1;b.y=p");
  EXPECT_EQ(config_id(configs[2]), "a.x=1;b.y=r");
  EXPECT_EQ(config_id(configs[3]), "a.x=2;b.y=p");
}

TEST(SweepShard, ThreeShardsCoverEveryConfigurationOnce) {
  SweepRequest r;
  r.vary = {"cluster.nodes=range(1,10,1)", "simulate.seed=0,1,2"};
  std::multiset<std::string> seen;
  std::vector<std::string> keys;
  const size_t total = sweep_configurations(r, keys).size();
  ASSERT_EQ(total, 30u);
  for (int i = 0; i < 3; ++i) {
    r.shard = parse_shard(std::to_string(i) + "/3");
    const auto mine = sweep_configurations(r, keys);
    EXPECT_EQ(mine.size(), 10u);
    for (const auto& c : mine) seen.insert(config_id(c));
  }
  EXPECT_EQ(seen.size(), total);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), total);
  EXPECT_EQ(keys, (std::vector<std::string>{"cluster.nodes", "simulate.seed"}));
}

TEST(SweepShard, MalformedShardsAreRefused) {
  for (const char* bad : {"3/3", "1", "/3", "a/b", "-1/3", "0/0", "1/2/3", ""})
    EXPECT_NE(message_of([bad] { parse_shard(bad); }).find("expected i/n"), std::string::npos)
        << bad;
  EXPECT_EQ(parse_shard("2/5").index, 2);
}

TEST(SweepGrid, ReadsOverrideSetsAndLocatesProblems) {
  const std::string path = temp_path("grid.yaml");
  write_file(path,
             "- {parallelism.tensor: 2, training.micro_batch_size: 1}\n"
             "- {parallelism.tensor: 4}\n");
  const auto configs = read_grid(path);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_EQ(config_id(configs[0]), "parallelism.tensor=2;training.micro_batch_size=1");
  write_file(path, "- {parallelism.tensor: 2}\n- {parallelism.tensro: 4}\n");
  const std::string m = message_of([&] { read_grid(path); });
  EXPECT_NE(m.find("grid.yaml:2"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean"), std::string::npos) << m;
}

// A real result, to check that every key it has survives the round trip.
nlohmann::json real_result() {
  static const nlohmann::json result = [] {
    Scenario s = load(DTSIM_SOURCE_DIR "/scenarios/default.yaml", {"simulate.engine=analytic"});
    return results_to_json(predict(std::move(s)).results);
  }();
  return result;
}

SweepRow ok_row() {
  SweepRow row;
  row.overrides = {{"cluster.nodes", "2"}, {"note.text", "a, \"quoted\"\nvalue"}};
  row.config = config_id(row.overrides);
  row.wall_s = 0.25;
  row.result = real_result();
  return row;
}

SweepRow error_row() {
  SweepRow row;
  row.overrides = {{"cluster.nodes", "3"}, {"note.text", "x"}};
  row.config = config_id(row.overrides);
  row.status = "error";
  row.exit_code = 2;
  row.error = "parallelism.tensor: does not divide,\nsecond line";
  return row;
}

TEST(SweepResults, EveryResultKeyHasAColumn) {
  std::set<std::string> columns(result_columns().begin(), result_columns().end());
  EXPECT_EQ(columns.size(), result_columns().size()) << "a column twice";
  EXPECT_EQ(result_columns().front(), "step_time_s");
  // Every scalar leaf of a real result (outside the cells kept as JSON) is a column.
  std::function<void(const nlohmann::json&, const std::string&)> walk =
      [&](const nlohmann::json& j, const std::string& prefix) {
        if (prefix == "time_by_kind_s" || prefix == "notes" ||
            prefix == "communication.per_group" || prefix == "model.other_layers" ||
            prefix == "memory.per_stage") {
          EXPECT_TRUE(columns.count(prefix)) << prefix;
          return;
        }
        if (j.is_object()) {
          for (auto it = j.begin(); it != j.end(); ++it)
            walk(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key());
          return;
        }
        EXPECT_TRUE(columns.count(prefix)) << prefix;
      };
  walk(real_result(), "");
}

class SweepRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(SweepRoundTrip, RowsComeBackWithEveryKey) {
  const std::string path = temp_path("rows" + GetParam());
  const ResultsFormat format = results_format(path, "-o");
  const std::vector<std::string> keys = {"cluster.nodes", "note.text"};
  write_file(path, header_line(format, keys) + format_line(format, keys, ok_row()) +
                       format_line(format, keys, error_row()));
  const ResultsFile file = read_results(path);
  EXPECT_EQ(file.varied_keys.size(), 2u);
  ASSERT_EQ(file.rows.size(), 2u);
  EXPECT_EQ(file.dropped_partial_lines, 0);
  const SweepRow& ok = file.rows[0];
  EXPECT_EQ(ok.config, ok_row().config);
  EXPECT_TRUE(ok.ok());
  EXPECT_DOUBLE_EQ(ok.wall_s, 0.25);
  // Numbers come back to the last bit.
  EXPECT_EQ(*number_of(ok, "step_time_s"), real_result()["step_time_s"].get<double>());
  EXPECT_EQ(*number_of(ok, "breakdown_s.compute"),
            real_result()["breakdown_s"]["compute"].get<double>());
  EXPECT_EQ(*number_of(ok, "config.gpus"), 16);
  EXPECT_EQ(*number_of(ok, "cluster.nodes"), 2);
  EXPECT_EQ(ok.result["config"]["gpu"], real_result()["config"]["gpu"]);
  EXPECT_EQ(ok.result["time_by_kind_s"], real_result()["time_by_kind_s"]);
  EXPECT_EQ(ok.result["notes"], real_result()["notes"]);
  EXPECT_EQ(ok.overrides[1].second, "a, \"quoted\"\nvalue");
  const SweepRow& bad = file.rows[1];
  EXPECT_EQ(bad.status, "error");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.error, error_row().error);
  EXPECT_FALSE(number_of(bad, "step_time_s").has_value());
}

INSTANTIATE_TEST_SUITE_P(Formats, SweepRoundTrip, ::testing::Values(".csv", ".jsonl"));

TEST(SweepResults, ACutOffLastLineIsDropped) {
  for (const std::string ext : {".csv", ".jsonl"}) {
    const std::string path = temp_path("cut" + ext);
    const ResultsFormat format = results_format(path, "-o");
    const std::vector<std::string> keys = {"cluster.nodes", "note.text"};
    const std::string whole = format_line(format, keys, error_row());
    write_file(path, header_line(format, keys) + format_line(format, keys, ok_row()) +
                         whole.substr(0, whole.size() / 2));
    const ResultsFile file = read_results(path);
    EXPECT_EQ(file.rows.size(), 1u) << ext;
    EXPECT_EQ(file.dropped_partial_lines, 1) << ext;
  }
}

TEST(SweepResults, CorruptAndForeignFilesAreRefused) {
  const std::string csv = temp_path("foreign.csv");
  write_file(csv, "a,b,c\n1,2,3\n");
  EXPECT_NE(message_of([&] { read_results(csv); }).find("not a dtsim sweep results file"),
            std::string::npos);
  const std::vector<std::string> keys = {"cluster.nodes", "note.text"};
  write_file(csv, header_line(ResultsFormat::kCsv, keys) + "x,1,ok\n");
  EXPECT_NE(message_of([&] { read_results(csv); }).find("foreign.csv:2"), std::string::npos);
  const std::string jsonl = temp_path("foreign.jsonl");
  write_file(jsonl, "{\"a\": 1}\n");
  EXPECT_NE(message_of([&] { read_results(jsonl); }).find("foreign.jsonl:1"), std::string::npos);
  write_file(jsonl, "not json\n");
  EXPECT_NE(message_of([&] { read_results(jsonl); }).find("not a JSON line"), std::string::npos);
  EXPECT_NE(message_of([] {
              read_results(temp_path("missing.csv"));
            }).find("cannot open the results file"),
            std::string::npos);
  EXPECT_NE(message_of([] { read_results("results.txt"); }).find(".csv or .jsonl"),
            std::string::npos);
}

TEST(SweepResults, MergeKeepsOneRowPerConfiguration) {
  const std::vector<std::string> keys = {"cluster.nodes", "note.text"};
  const std::string a = temp_path("a.csv"), b = temp_path("b.jsonl"), out = temp_path("m.csv");
  write_file(
      a, header_line(ResultsFormat::kCsv, keys) + format_line(ResultsFormat::kCsv, keys, ok_row()));
  write_file(b, format_line(ResultsFormat::kJsonl, keys, ok_row()) +
                    format_line(ResultsFormat::kJsonl, keys, error_row()));
  const MergeSummary m = merge_results({a, b}, out);
  EXPECT_EQ(m.rows, 2);
  EXPECT_EQ(m.duplicates, 1);
  EXPECT_EQ(read_results(out).rows.size(), 2u);
  const std::string other = temp_path("other.csv");
  write_file(other, header_line(ResultsFormat::kCsv, {"simulate.seed"}) +
                        format_line(ResultsFormat::kCsv, {"simulate.seed"}, [] {
                          SweepRow r = error_row();
                          r.overrides = {{"simulate.seed", "1"}};
                          r.config = config_id(r.overrides);
                          return r;
                        }()));
  EXPECT_NE(message_of([&] {
              merge_results({a, other}, temp_path("m2.csv"));
            }).find("only shards of one sweep"),
            std::string::npos);
}

}  // namespace
}  // namespace dtsim::driver
