#!/usr/bin/env bash
# The simulator against real runs (docs/simulator.md "Validation against real
# runs"): runs experiments/validation-n4.toml and validation-n8.toml — the
# demo to its target at 4 and 8 ranks, SYNC, SSP(10), ASYNC, ADAPTIVE — and
# their -floor twins (each step's computation at least 25 ms, so that the
# ranks compute side by side on a host with fewer cores than ranks) with
# serene-experiment (real switch and ranks on this host), then each run again
# in serene-sim with the compute time per iteration and the time per
# evaluation that run measured, and records both, seed by seed, in
# docs/data/sim-validation.jsonl (scripts/evidence.py record-validation).
# Real time: run it on a quiet machine (~50 min on 2 cores for 5 seeds; the
# floor sizes ~2.5 (4 ranks) and ~3.5 (8) min per seed).
#   bash scripts/sim_validation.sh                          # n4, n8, n4-floor, n8-floor; seeds 1-5
#   bash scripts/sim_validation.sh --sizes "4 8-floor" --seeds "1 2" --out /tmp/v
#   bash scripts/sim_validation.sh --no-record              # outputs only, in --out
#   bash scripts/sim_validation.sh --resimulate /tmp/v --sizes 4-floor
#       # keep the real runs in /tmp/v/nN/real-S, simulate their twins again
#       # and record (after a simulator change; deterministic, no quiet host)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=build/bin
OUT=
SEEDS="1 2 3 4 5"
SIZES="4 8 4-floor 8-floor"
record=1
resimulate=0
usage() { sed -n '2,18p' "$0"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin-dir) BIN="$2"; shift 2 ;;
    --out) [[ $resimulate -eq 0 ]] || { echo "sim_validation.sh: --out and --resimulate name the same directory; give one" >&2; exit 2; }
           OUT="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --sizes) SIZES="$2"; shift 2 ;;
    --no-record) record=0; shift ;;
    --resimulate) [[ -z $OUT ]] || { echo "sim_validation.sh: --out and --resimulate name the same directory; give one" >&2; exit 2; }
                  OUT="$2"; resimulate=1; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "sim_validation.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for s in $SEEDS; do
  [[ "$s" =~ ^[0-9]+$ ]] || { echo "sim_validation.sh: --seeds: '$s' is not a seed" >&2; exit 2; }
done
for n in $SIZES; do
  [[ -f experiments/validation-n$n.toml ]] ||
    { echo "sim_validation.sh: --sizes: no experiments/validation-n$n.toml (4, 8, 4-floor and 8-floor exist)" >&2; exit 2; }
done
if [[ $resimulate -eq 1 ]]; then
  for n in $SIZES; do
    for s in $SEEDS; do
      [[ -f "$OUT/n$n/real-$s/results.json" ]] ||
        { echo "sim_validation.sh: --resimulate: no $OUT/n$n/real-$s/results.json (a real run of an earlier sim_validation.sh --out $OUT; choose --sizes and --seeds it ran)" >&2; exit 2; }
    done
  done
fi
for b in serene-experiment serene-sim; do
  [[ -x "$BIN/$b" ]] || { echo "sim_validation.sh: no $BIN/$b; build first (README.md)" >&2; exit 1; }
done
if [[ -z $OUT ]]; then
  OUT=$(mktemp -d /tmp/serene-validation.XXXXXX)
  [[ $record -eq 1 ]] && trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"
PY=/usr/bin/python3
started=$(date +%s)

for n in $SIZES; do
  scenario=experiments/validation-n$n.toml
  for s in $SEEDS; do
    if [[ $resimulate -eq 0 ]]; then
      echo "=== n$n seed $s: real runs ($(( $(date +%s) - started )) s so far)"
      "$BIN/serene-experiment" -c "$scenario" --seed "$s" --out "$OUT/n$n/real-$s" | tail -n 5
    else
      echo "=== n$n seed $s: the real runs of $OUT/n$n/real-$s ($(( $(date +%s) - started )) s so far)"
    fi
    # Per run: index, policy, compute ms per iteration and ms per evaluation
    # as the real run measured them.
    $PY - "$OUT/n$n/real-$s/results.json" > "$OUT/n$n/calibration-$s.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for i, r in enumerate(j["runs"]):
    if not r["ok"]:
        sys.exit(f"sim_validation.sh: real run {r['label']} failed: {r['error']}")
    ev = r["ranks"][r["evaluating_rank"]]
    evals = max(1, len(r["timeline"]))
    # serene-sim --runs takes serene:POLICY, or a policy script's path.
    run = r["policy"] if r["policy"].endswith(".lua") else "serene:" + r["policy"]
    print(i, run, f"{1e3 * r['compute_per_iteration_s']:.3f}", f"{1e3 * ev['eval_s'] / evals:.3f}")
PY
    while read -r i policy compute_ms eval_ms; do
      echo "--- n$n seed $s run $i ($policy): simulated with compute $compute_ms ms, evaluation $eval_ms ms"
      # The twin computes with the kernels the real ranks used (this CPU's
      # own): serene-sim otherwise pins AVX2's, which round differently on
      # an AVX-512 CPU and make the two runs' models drift apart
      # (sim/math_kernels.h).
      SERENE_MATH_KERNELS=native "$BIN/serene-sim" -c "$scenario" --seed "$s" --runs "$policy" --compute-ms "$compute_ms" \
        --eval-ms "$eval_ms" --out "$OUT/n$n/sim-$s-$i" | grep -E '^  JCT' || true
    done < "$OUT/n$n/calibration-$s.txt"
  done
  if [[ $record -eq 1 ]]; then
    $PY scripts/evidence.py record-validation "$OUT/n$n" --scenario "n$n"
  fi
done
echo "=== done in $(( $(date +%s) - started )) s; outputs in $OUT"
