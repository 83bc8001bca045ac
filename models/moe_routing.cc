// Mixture-of-experts routing statistics (models/model_builder.h): the expected maximum of
// normals and the busiest expert-parallel rank's load under uniformly random routing.
#include <cmath>
#include <numbers>

#include "models/model_builder.h"

namespace dtsim::models {

double expected_max_of_normals(int n) {
  if (n <= 1) return 0;
  // Simpson's rule over [-12, 12], where the integrand's tails are below 1e-30.
  constexpr int kIntervals = 4800;
  constexpr double kLo = -12, kHi = 12, kStep = (kHi - kLo) / kIntervals;
  auto f = [n](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
    const double Phi = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    return x * n * phi * std::pow(Phi, n - 1);
  };
  double sum = f(kLo) + f(kHi);
  for (int i = 1; i < kIntervals; ++i) sum += f(kLo + i * kStep) * (i % 2 == 1 ? 4 : 2);
  return sum * kStep / 3;
}

double random_routing_load_factor(double tokens_per_rank, int experts, int top_k,
                                  int expert_parallel) {
  const double ep = expert_parallel, E = experts, k = top_k;
  if (expert_parallel < 2 || top_k >= experts || tokens_per_rank <= 0) return 1;
  const double share = 1 / ep;  // of the experts, held by one rank
  // Each token's k picks land on a rank's experts as a hypergeometric draw: mean k x share,
  // variance k x share x (1 - share) x (E - k) / (E - 1).
  const double tokens = tokens_per_rank * ep;
  const double mean = tokens * k * share;
  const double sigma = std::sqrt(tokens * k * share * (1 - share) * (E - k) / (E - 1));
  return 1 + std::sqrt(ep / (ep - 1)) * expected_max_of_normals(expert_parallel) * sigma / mean;
}

}  // namespace dtsim::models
