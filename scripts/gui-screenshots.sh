#!/usr/bin/env bash
# Takes the screenshots of dtsim-gui that README.md and docs/user-guide.md show, under Xvfb (a
# virtual X display, so the pictures have the X fonts and look as on a desktop): the editor,
# summary, timeline, memory and scaling tabs for two scenarios, 1280x800 pixels each, written to
# docs/images/gui-<scenario>-<tab>.png. The ctest gui_app.committed_screenshots_are_not_blank
# checks them.
#
#   scripts/gui-screenshots.sh            # after building dtsim-gui (scripts/setup.sh test does)
#
# Environment: BUILD_DIR (default build), OUT_DIR (default docs/images), DISPLAY_NUMBER (default
# 97). Needs xvfb (scripts/setup.sh installs it).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
out=${OUT_DIR:-docs/images}
gui=$build/gui/app/dtsim-gui
if [[ ! -x $gui ]]; then
  echo "gui-screenshots: $gui is not built; build it with: cmake --build $build --target dtsim-gui" >&2
  exit 1
fi
if ! command -v Xvfb > /dev/null; then
  echo "gui-screenshots: Xvfb is missing; install it with: apt-get install xvfb (scripts/setup.sh does)" >&2
  exit 1
fi
mkdir -p "$out"

display=:${DISPLAY_NUMBER:-97}
runtime=$(mktemp -d)
chmod 700 "$runtime"
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp > "$runtime/xvfb.log" 2>&1 &
xvfb=$!
trap 'kill $xvfb 2> /dev/null || true; wait $xvfb 2> /dev/null || true; rm -rf "$runtime"' EXIT
for _ in $(seq 50); do  # the display is up when its socket is
  [[ -S /tmp/.X11-unix/X${display#:} ]] && break
  sleep 0.1
done
if [[ ! -S /tmp/.X11-unix/X${display#:} ]]; then
  echo "gui-screenshots: Xvfb did not start on $display:" >&2
  cat "$runtime/xvfb.log" >&2
  exit 1
fi
export DISPLAY=$display XDG_RUNTIME_DIR=$runtime
unset QT_QPA_PLATFORM

# name, scenario, engine ("" for the scenario's own). The 3D-parallel scenario (1024 A100,
# TP8 x PP8 x DP16, interleaved 1F1B) runs with the analytic engine: the same Program and trace,
# in a second instead of SimGrid's quarter of a minute per sweep point.
shots=(
  "default scenarios/default.yaml"
  "gpt3-175b-3d scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml analytic"
)
for shot in "${shots[@]}"; do
  read -r name scenario engine <<< "$shot"
  for tab in editor summary timeline memory scaling; do
    args=("$scenario" --screenshot "$out/gui-$name-$tab.png" --tab "$tab")
    [[ -n ${engine:-} ]] && args+=(--engine "$engine")
    "$gui" "${args[@]}"
  done
done
echo "gui-screenshots: wrote $(ls "$out"/gui-*.png | wc -l) images to $out"
