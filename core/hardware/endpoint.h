// Where a flow starts or ends on the cluster: a GPU, by its global rank, or a node's NVSwitch, by
// its node (NVLS: the switch reduces and multicasts, core/collectives/collective_schedule.h).
//
// Contract:
// - A typed value: a switch is never encoded as a rank, and a pure delay is not an endpoint at
//   all (core/collectives/collective_schedule.h, Flow). rank() is only for GPUs and node() only
//   for switches; asking the other is a programmer error (an assertion).
// - NICs are not endpoints: a flow between GPUs of different nodes leaves through the source
//   GPU's NIC and enters through the destination GPU's (core/hardware/cluster.h, nic_of).
// - Ordered and comparable, so that flows can be grouped by their pair of endpoints.
#pragma once

#include <cassert>
#include <compare>
#include <cstdint>

#include "core/base/ids.h"

namespace dtsim {

class Endpoint {
 public:
  enum class Kind : uint8_t { kGpu, kSwitch };

  constexpr Endpoint() = default;
  static constexpr Endpoint gpu(Rank rank) { return Endpoint(Kind::kGpu, rank); }
  static constexpr Endpoint node_switch(int node) { return Endpoint(Kind::kSwitch, node); }

  constexpr Kind kind() const { return kind_; }
  constexpr bool is_gpu() const { return kind_ == Kind::kGpu; }
  constexpr bool is_switch() const { return kind_ == Kind::kSwitch; }
  // The GPU's global rank.
  constexpr Rank rank() const {
    assert(is_gpu());
    return index_;
  }
  // The switch's node.
  constexpr int node() const {
    assert(is_switch());
    return index_;
  }

  friend constexpr auto operator<=>(const Endpoint&, const Endpoint&) = default;

 private:
  constexpr Endpoint(Kind kind, int32_t index) : kind_(kind), index_(index) {}

  Kind kind_ = Kind::kGpu;
  int32_t index_ = 0;
};

}  // namespace dtsim
