#!/usr/bin/env bash
# Sets up a Debian 12 machine for dtsim and builds it. Idempotent: a second run installs
# nothing and rebuilds incrementally.
#
#   scripts/setup.sh run    install what is missing, build, run scenarios/default.yaml
#   scripts/setup.sh test   install what is missing, build, run the whole test suite
#
# Environment: BUILD_DIR (default build), JOBS (default: all cores), DTSIM_SKIP_SANITIZE=1 to
# skip the AddressSanitizer/UBSan pass over the bad-input corpus in `test`.
set -euo pipefail

mode=${1:-run}
case "$mode" in
  run | test) ;;
  *)
    echo "usage: scripts/setup.sh run|test" >&2
    exit 2
    ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}

# Debian packages the build and tests need (see docs/user-guide.md, "Install").
packages=(build-essential cmake ninja-build pkg-config
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libeigen3-dev libsimgrid-dev python3 python3-jsonschema
  libopenmpi-dev openmpi-bin
  # Qt 6 for the plotting module (gui/plot: dtsim analyze --plot) and the GUI. Qt Charts' CMake
  # package needs Qt OpenGL's, which apt leaves out without recommends; the offscreen platform
  # that draws without a display comes with qt6-base-dev (libqt6gui6) and needs one font.
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev fonts-dejavu-core
  # dtsim-gui's screenshots (scripts/gui-screenshots.sh) run it under a virtual X display.
  xvfb xauth imagemagick)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing missing Debian packages: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: installing packages needs root; rerun as root (or with sudo)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} Debian packages already installed"
fi

configure() {  # dir, extra cmake args... (warnings are errors here and in CI: DTSIM_WERROR)
  local dir=$1
  shift
  if [[ ! -f $dir/build.ninja ]]; then
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTSIM_WERROR=ON "$@"
  fi
}

# A Release build (-O3, no debug information: a third less compile time than RelWithDebInfo on
# the larger sources), so the build the tests run is also the plain `cmake
# -DCMAKE_BUILD_TYPE=Release` build a user makes, with warnings as errors on top.
# DTSIM_ENABLE_GUI=ON: the packages above are installed, so a Qt that is not found is an error
# here rather than plotting tests that silently go missing.
configure "$build" -DDTSIM_ENABLE_GUI=ON
if [[ $mode == run ]]; then
  # Running needs only the dtsim command and the desktop application, not the test suite.
  echo "setup: building dtsim and dtsim-gui in $build with $jobs jobs"
  cmake --build "$build" --parallel "$jobs" --target dtsim dtsim-gui
  echo "setup: running dtsim simulate scenarios/default.yaml"
  "$build/cli/dtsim" simulate scenarios/default.yaml
  echo "setup: start the GUI: $build/gui/app/dtsim-gui scenarios/default.yaml"
  exit 0
fi

echo "setup: building everything in $build with $jobs jobs"
cmake --build "$build" --parallel "$jobs"
echo "setup: running the test suite"
(cd "$build" && ctest --output-on-failure --parallel "$jobs" --label-exclude slow)

# A plain Release build must compile. The build above is one unless its folder already held a
# build of another type (a developer's RelWithDebInfo or Debug tree): then compile the command
# once more, in the Release configuration, as a user would make it.
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
if [[ $build_type != Release ]]; then
  release=${build}-release
  configure "$release" -DCMAKE_BUILD_TYPE=Release -DDTSIM_BUILD_TESTS=OFF
  echo "setup: $build is a $build_type build; building dtsim in the Release configuration in $release"
  cmake --build "$release" --parallel "$jobs" --target dtsim
fi

if [[ ${DTSIM_SKIP_SANITIZE:-0} != 1 ]]; then
  # The bad-input corpus again, with AddressSanitizer and UBSan on every dtsim code path it hits.
  san=${build}-sanitize
  # Built without Qt (DTSIM_ENABLE_GUI=OFF), so CI also compiles the build without plotting and
  # checks that `dtsim analyze --plot` refuses there (the analyze_cli test).
  configure "$san" -DCMAKE_BUILD_TYPE=Debug -DDTSIM_SANITIZE=address,undefined -DDTSIM_ENABLE_CUDA=OFF \
    -DDTSIM_ENABLE_GUI=OFF
  echo "setup: building the sanitizer configuration in $san"
  cmake --build "$san" --parallel "$jobs" --target dtsim bad_input_test
  (cd "$san" && ctest --output-on-failure --parallel "$jobs" --label-regex badinput)
  (cd "$san" && ctest --output-on-failure --tests-regex '^analyze_cli$')
  # The fuzzers on a fixed budget under the sanitizers: mutated YAML, and boundary values on
  # every numeric key (tests/fuzz/; longer runs are recorded in bench/results/property-fuzz.md).
  echo "setup: fuzzing the sanitizer build (fixed seeds)"
  python3 tests/fuzz/mutate_scenarios.py "$san/cli/dtsim" 41 60
  python3 tests/fuzz/property_test.py "$san/cli/dtsim" 43 60
fi
