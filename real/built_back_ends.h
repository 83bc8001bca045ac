// Which real-mode back ends this build compiled: DTSIM_HAVE_MPI and DTSIM_HAVE_CUDA are set to 1
// by real/CMakeLists.txt on the targets that know the back ends; absent, they are 0. Private to
// real/ (backends.cc, backends_info.cc).
#pragma once

#ifndef DTSIM_HAVE_MPI
#define DTSIM_HAVE_MPI 0
#endif
#ifndef DTSIM_HAVE_CUDA
#define DTSIM_HAVE_CUDA 0
#endif
