#!/usr/bin/env bash
# dtsim plan's speed and answer on the two large searches: GPT-3 175B on 1024 A100 and Llama 3
# 70B on 512 H100, each one `dtsim plan --top 3 --json` process (its SimGrid children included in
# the CPU time). Prints a markdown table: the configurations enumerated, refused by the loader,
# evaluated by the analytic model (step-level evaluator or engine), how many fit, the search's
# wall and CPU seconds and rates, the whole command's wall and CPU seconds, and the best
# configuration with its SimGrid step time. Then GPT-3's best against the published Megatron-LM
# configuration (the scenario as written: TP 8, PP 8 interleaved, micro-batch 1, global batch
# 1536) simulated the same way (dtsim simulate --engine simgrid).
#   bench/run_plan_speed.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dtsim=${1:-build}/cli/dtsim
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp".*' EXIT

echo "load average (1, 5, 15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| scenario | enumerated | refused | evaluated (step-level / engine / skipped) | fit | search wall s | search CPU s | enumerated per wall s | evaluated per CPU s | step-level evaluations per CPU s | plan wall s | plan CPU s | best (SimGrid step s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for scenario in scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml \
                scenarios/llama3-70b-zero1-512-h100.yaml; do
  /usr/bin/time -f "%e %U %S" -o "$tmp" "$dtsim" plan "$scenario" --top 3 -j 2 --json \
    >"$tmp.$(basename "$scenario").json" 2>/dev/null
  read -r wall_s user_s sys_s <"$tmp"
  python3 - "$tmp.$(basename "$scenario").json" "$scenario" "$wall_s" "$user_s" "$sys_s" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["search"]
evaluated = s["step_level_evaluations"] + s["engine_evaluations"]
best = d["ranked"][0]
cpu = float(sys.argv[4]) + float(sys.argv[5])
print(f"| {sys.argv[2]} | {s['enumerated']} | {s['invalid']} | {evaluated} ({s['step_level_evaluations']} / "
      f"{s['engine_evaluations']} / {s['not_evaluated']}) | {s['fit']} | {s['analytic_wall_s']:.1f} | "
      f"{s['analytic_cpu_s']:.1f} | {s['enumerated'] / s['analytic_wall_s']:.0f} | "
      f"{evaluated / s['analytic_cpu_s']:.0f} | {s['step_level_evaluations'] / s['step_level_cpu_s']:.0f} | {sys.argv[3]} | {cpu:.1f} | {best['config']} "
      f"({best.get('step_time_s', float('nan')):.3f}) |")
PY
done
echo
gpt3=scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml
"$dtsim" simulate "$gpt3" --engine simgrid --json >"$tmp.megatron.json"
python3 - "$tmp.gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml.json" "$tmp.megatron.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["ranked"][0]
meg = json.load(open(sys.argv[2]))
print(f"GPT-3 175B, 1024 A100, global batch 1536, SimGrid:")
print(f"- published Megatron-LM configuration (TP 8, PP 8 interleaved v 2, mb 1, full recompute): "
      f"{meg['step_time_s']:.3f} s per step, MFU {100 * meg['flops']['mfu']:.1f} %")
print(f"- plan's best ({plan['config']}): {plan['step_time_s']:.3f} s per step, "
      f"MFU {100 * plan['mfu']:.1f} %; {'at least as fast' if plan['step_time_s'] <= meg['step_time_s'] else 'SLOWER'} "
      f"({plan['step_time_s'] / meg['step_time_s']:.3f} x the published configuration's step time)")
PY
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
