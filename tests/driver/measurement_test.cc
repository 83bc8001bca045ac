// What dtsim real makes of a measured trace before it reports it: receives that start at their
// sends, and how disturbed the machine was (driver/real.h, driver/measurement_conditions.h).
#include <gtest/gtest.h>

#include "driver/measurement_conditions.h"
#include "driver/real.h"

namespace dtsim::driver {
namespace {

// Rank 0 sends twice to rank 1 (tags 7 and 8); rank 1 receives them in that order.
Job two_messages() {
  Job job;
  job.world_size = 2;
  for (Rank r : {0, 1}) {
    Program p;
    p.rank = r;
    const StreamId s = p.add_stream("pp");
    for (int tag : {7, 8}) {
      if (r == 0)
        p.append(s, SendOp{1, Bytes(1 << 20), tag}, {});
      else
        p.append(s, RecvOp{0, Bytes(1 << 20), tag}, {});
    }
    job.programs.push_back(std::move(p));
  }
  return job;
}

Span span(Rank rank, size_t op, SpanKind kind, double start, double end, int iteration = 0) {
  return Span{rank, 0, iteration, op, kind, Seconds(start), Seconds(end), Bytes(1 << 20)};
}

TEST(Measurement, AReceiveStartsWhenItsSendWasPosted) {
  const Job job = two_messages();
  Trace t;
  // The first message: receive posted at 0.1 s, sent at 0.5 s, in at 0.6 s: 0.4 s of waiting.
  // The second: sent at 0.7 s, before its receive was posted at 0.8 s: nothing to move.
  t.spans = {span(0, 0, SpanKind::kSend, 0.5, 0.6), span(0, 1, SpanKind::kSend, 0.7, 0.75),
             span(1, 0, SpanKind::kRecv, 0.1, 0.6), span(1, 1, SpanKind::kRecv, 0.8, 0.85)};
  EXPECT_EQ(start_receives_at_their_sends(job, t), 1);
  EXPECT_DOUBLE_EQ(t.spans[2].start.value(), 0.5);  // the transfer alone
  EXPECT_DOUBLE_EQ(t.spans[2].end.value(), 0.6);
  EXPECT_DOUBLE_EQ(t.spans[3].start.value(), 0.8);
}

TEST(Measurement, ReceivesMatchTheirOwnStepAndTag) {
  const Job job = two_messages();
  Trace t;
  // Step 1's send of tag 7 must not move step 0's receive of tag 7.
  t.spans = {span(0, 0, SpanKind::kSend, 0.05, 0.06, 0), span(0, 0, SpanKind::kSend, 2.0, 2.1, 1),
             span(1, 0, SpanKind::kRecv, 0.0, 0.06, 0), span(1, 0, SpanKind::kRecv, 1.0, 2.1, 1)};
  EXPECT_EQ(start_receives_at_their_sends(job, t), 2);
  EXPECT_DOUBLE_EQ(t.spans[2].start.value(), 0.05);
  EXPECT_DOUBLE_EQ(t.spans[3].start.value(), 2.0);
}

Trace repeated_op(std::initializer_list<double> seconds) {
  Trace t;
  int it = 0;
  for (double s : seconds)
    t.spans.push_back(Span{0, 0, it++, 0, SpanKind::kCompute, Seconds(10.0 * it),
                           Seconds(10.0 * it + s), Bytes(0)});
  return t;
}

TEST(Measurement, SpreadBetweenStepsDecidesDisturbed) {
  HostSample quiet;
  quiet.cpus = 8;
  quiet.load_1m = 0.5;
  quiet.cpu_total = 1000;
  quiet.cpu_steal = 0;
  HostSample later = quiet;
  later.cpu_total = 2000;
  const MeasurementConditions steady = assess(quiet, later, repeated_op({0.010, 0.0102, 0.0101}));
  EXPECT_EQ(steady.compute_ops_compared, 1);
  EXPECT_NEAR(steady.spread_p90, 0.02, 1e-9);
  EXPECT_FALSE(steady.disturbed) << steady.summary;
  EXPECT_DOUBLE_EQ(steady.steal_fraction, 0.0);

  const MeasurementConditions noisy = assess(quiet, later, repeated_op({0.010, 0.013, 0.010}));
  EXPECT_NEAR(noisy.spread_p90, 0.3, 1e-9);
  EXPECT_TRUE(noisy.disturbed);
  EXPECT_NE(noisy.summary.find("varied by up to 30 %"), std::string::npos) << noisy.summary;

  HostSample stolen = later;
  stolen.cpu_steal = 100;  // 10 % of the 1000 ticks of the run
  const MeasurementConditions vm = assess(quiet, stolen, repeated_op({0.010, 0.0101}));
  EXPECT_NEAR(vm.steal_fraction, 0.1, 1e-12);
  EXPECT_TRUE(vm.disturbed);

  HostSample busy = quiet;
  busy.load_1m = 9.5;  // above the 8 CPUs before dtsim's ranks ran
  EXPECT_TRUE(assess(busy, later, repeated_op({0.010, 0.0101})).disturbed);

  // Ops under 50 us and single steps give no spread, and the summary says what to do.
  const MeasurementConditions one = assess(quiet, later, repeated_op({0.010}));
  EXPECT_EQ(one.compute_ops_compared, 0);
  EXPECT_NE(one.summary.find("--iterations 2"), std::string::npos) << one.summary;
  EXPECT_EQ(assess(quiet, later, repeated_op({20e-6, 40e-6})).compute_ops_compared, 0);
}

}  // namespace
}  // namespace dtsim::driver
