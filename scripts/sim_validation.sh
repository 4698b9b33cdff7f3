#!/usr/bin/env bash
# The simulator against real runs (docs/simulator.md "Validation"): runs
# experiments/validation.toml with serene-experiment (real switch and ranks on
# this host) and with serene-sim, for each seed, the simulator's compute model
# set to the compute time per iteration the real SYNC run of that seed
# measured. Prints, per run, JCT as % of SYNC in both and their difference,
# and writes OUT/validation.md.
#   bash scripts/sim_validation.sh                    # seeds 1 2 3, results/validation
#   bash scripts/sim_validation.sh --seeds "1 2" --out /tmp/v
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=build/bin
OUT=results/validation
SEEDS="1 2 3"
SCENARIO=experiments/validation.toml
usage() { sed -n '2,10p' "$0"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin-dir) BIN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --scenario) SCENARIO="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "sim_validation.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for b in serene-experiment serene-sim; do
  [[ -x "$BIN/$b" ]] || { echo "sim_validation.sh: no $BIN/$b; build first (README.md)" >&2; exit 1; }
done
for s in $SEEDS; do
  [[ "$s" =~ ^[0-9]+$ ]] || { echo "sim_validation.sh: --seeds: '$s' is not a seed" >&2; exit 2; }
done
mkdir -p "$OUT"

for s in $SEEDS; do
  echo "=== seed $s: real runs ==="
  "$BIN/serene-experiment" -c "$SCENARIO" --seed "$s" --out "$OUT/real-$s" | tail -n 3
  # The compute model: what the real SYNC run measured per iteration.
  ms=$(/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; print('%.3f' % (1e3*r['compute_per_iteration_s']))" "$OUT/real-$s/results.json")
  echo "=== seed $s: simulated, compute $ms ms per step ==="
  "$BIN/serene-sim" -c "$SCENARIO" --seed "$s" --compute-ms "$ms" --out "$OUT/sim-$s" | tail -n 3
done

/usr/bin/python3 - "$OUT" $SEEDS <<'PY'
import json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
def load(kind, s):
    return json.load(open(f"{out}/{kind}-{s}/results.json"))["runs"]
labels = [r["label"] for r in load("real", seeds[0])]
lines = ["| run | real JCT % of SYNC | simulated | difference (pt) | real JCT (s) | simulated (s) |",
         "|---|---|---|---|---|---|"]
worst = 0.0
for i, label in enumerate(labels):
    real = [load("real", s)[i] for s in seeds]
    sim = [load("sim", s)[i] for s in seeds]
    rp = [r["jct_pct_of_baseline"] or 100.0 for r in real]
    sp = [r["jct_pct_of_baseline"] or 100.0 for r in sim]
    diff = [a - b for a, b in zip(sp, rp)]
    worst = max(worst, max(abs(d) for d in diff))
    f = lambda xs: f"{statistics.mean(xs):.1f} ± {statistics.stdev(xs):.1f}" if len(xs) > 1 else f"{xs[0]:.1f}"
    lines.append(f"| {label} | {f(rp)} | {f(sp)} | {f(diff)} | "
                 f"{f([r['job_completion_s'] for r in real])} | {f([r['job_completion_s'] for r in sim])} |")
lines.append("")
lines.append(f"Seeds {' '.join(seeds)}; largest difference of a JCT ratio over runs and seeds: {worst:.1f} pt.")
text = "\n".join(lines) + "\n"
open(f"{out}/validation.md", "w").write(text)
print(text)
PY
