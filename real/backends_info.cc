// What this build's real mode has: the same in the linked back ends (backends.cc) and in the
// dtsim program, which loads them on demand (backends_on_demand.cc).
#include "real/backends.h"

#include "real/built_back_ends.h"

namespace dtsim::real {

std::string to_string(Backend b) {
  return b == Backend::kCpu ? "cpu" : "cuda";
}

bool built_with_mpi() {
  return DTSIM_HAVE_MPI != 0;
}
bool built_with_cuda() {
  return DTSIM_HAVE_CUDA != 0;
}

}  // namespace dtsim::real
