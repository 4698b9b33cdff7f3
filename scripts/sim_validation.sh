#!/usr/bin/env bash
# The simulator against real runs (docs/simulator.md "Validation against real
# runs"): runs experiments/validation-n4.toml and validation-n8.toml — the
# demo to its target at 4 and 8 ranks, SYNC, SSP(10), ASYNC, ADAPTIVE — and
# their -floor twins (each step's computation at least 25 ms, so that the
# ranks compute side by side on a host with fewer cores than ranks) with
# serene-experiment (real switch and ranks on this host), then each run again
# in serene-sim with the compute time per iteration and the time per
# evaluation that run measured, and the switch time per packet that a
# straggler-free SYNC run of this host measured first, and records both, seed by seed, in
# docs/data/sim-validation.jsonl (scripts/evidence.py record-validation).
# Real time: run it on a quiet machine (on 2 cores, per seed: ~1 min at 4
# ranks, ~2 at 8, ~2.5 and ~3.5 for the floor sizes).
#   bash scripts/sim_validation.sh       # n4, n8 (seeds 1-5), n4-floor, n8-floor (1-10)
#   bash scripts/sim_validation.sh --sizes "4 8-floor" --seeds "1 2" --out /tmp/v
#   bash scripts/sim_validation.sh --no-record              # outputs only, in --out
#   bash scripts/sim_validation.sh --resimulate /tmp/v --sizes 4-floor
#       # keep the real runs in /tmp/v/nN/real-S (and host-sync), simulate
#       # their twins again and record (after a simulator change;
#       # deterministic, no quiet host)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=build/bin
OUT=
SEEDS=  # --seeds; by default seeds_of SIZE
SIZES="4 8 4-floor 8-floor"
record=1
resimulate=0
usage() { sed -n '2,20p' "$0"; }
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
# The docs' tables: 10 seeds with a floor (the median of five moved by more
# than the 3-point bound from one recording to the next), 5 without.
seeds_of() { if [[ -n $SEEDS ]]; then echo "$SEEDS"; elif [[ $1 == *-floor ]]; then echo "1 2 3 4 5 6 7 8 9 10"; else echo "1 2 3 4 5"; fi; }
for s in $SEEDS; do
  [[ "$s" =~ ^[0-9]+$ ]] || { echo "sim_validation.sh: --seeds: '$s' is not a seed" >&2; exit 2; }
done
for n in $SIZES; do
  [[ -f experiments/validation-n$n.toml ]] ||
    { echo "sim_validation.sh: --sizes: no experiments/validation-n$n.toml (4, 8, 4-floor and 8-floor exist)" >&2; exit 2; }
done
if [[ $resimulate -eq 1 ]]; then
  for n in $SIZES; do
    for s in $(seeds_of "$n"); do
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

# The host's cost of a synchronized clock, as a switch time per packet
# (serene-sim --switch-us): on this host the switch is a process that shares
# two cores with the ranks, and a SYNC clock's bursts (the last rank's push,
# then every rank's READs at once) queue for it and for the ranks' receive
# path; the simulator's switch is a hardware pipeline. A straggler-free SYNC
# run of the scenario (300 steps) measures a clock; the simulator then finds
# the time per packet that makes its own clock of that run as long
# (bisection, timing only). The validation's runs, with their stragglers,
# then test the model with that one number fixed beforehand.
calibrate_switch() {  # calibrate_switch N: writes OUT/nN/switch-us.txt
  local n=$1 scenario=experiments/validation-n$1.toml
  local flags=(-c "$scenario" --runs serene:sync --straggler none --steps 300 --target 0
               --eval-every 1000 --eval-samples 1000)
  if [[ $resimulate -eq 0 ]]; then
    echo "=== n$n: the host's synchronized clock (SYNC, no stragglers, 300 steps)"
    "$BIN/serene-experiment" "${flags[@]}" --out "$OUT/n$n/host-sync" | grep -E 'job completion' || true
  fi
  [[ -f "$OUT/n$n/host-sync/results.json" ]] ||
    { echo "sim_validation.sh: no $OUT/n$n/host-sync/results.json (the host's SYNC run)" >&2; exit 1; }
  $PY - "$OUT/n$n/host-sync/results.json" "$OUT/n$n/host-sync-sim" "$BIN/serene-sim" "${flags[@]}" \
    > "$OUT/n$n/switch-us.txt" <<'PY'
import json, subprocess, sys
real_path, scratch, sim, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
run = json.load(open(real_path))["runs"][0]
if not run["ok"]:
    sys.exit(f"sim_validation.sh: the host's SYNC run failed: {run['error']}")
target = run["job_completion_s"]
compute_ms = f"{1e3 * run['compute_per_iteration_s']:.3f}"
def simulated(us):  # the simulated run's JCT with the switch taking `us` per packet
    subprocess.run([sim, *flags, "--timing-only", "--compute-ms", compute_ms, "--jitter", "0",
                    "--switch-us", f"{us:.3f}", "--out", scratch], check=True,
                   stdout=subprocess.DEVNULL)
    return json.load(open(f"{scratch}/results.json"))["runs"][0]["job_completion_s"]
lo, hi = 0.0, 200.0
if simulated(lo) >= target:
    hi = lo
elif simulated(hi) < target:
    sys.exit(f"sim_validation.sh: the host's SYNC clock ({1e3 * target / 300:.2f} ms) is longer "
             f"than any switch time up to {hi:.0f} us per packet explains")
while hi - lo > 0.05:
    mid = (lo + hi) / 2
    lo, hi = (mid, hi) if simulated(mid) < target else (lo, mid)
print(f"{hi:.2f}")
print(f"--- switch time per packet {hi:.2f} us (the host's SYNC clock: "
      f"{1e3 * target / run['iterations_rank0']:.2f} ms)", file=sys.stderr)
PY
}

for n in $SIZES; do
  scenario=experiments/validation-n$n.toml
  calibrate_switch "$n"
  switch_us=$(cat "$OUT/n$n/switch-us.txt")
  for s in $(seeds_of "$n"); do
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
      echo "--- n$n seed $s run $i ($policy): simulated with compute $compute_ms ms, evaluation $eval_ms ms, switch $switch_us us per packet"
      # The twin computes with the kernels the real ranks used (this CPU's
      # own): serene-sim otherwise pins AVX2's, which round differently on
      # an AVX-512 CPU and make the two runs' models drift apart
      # (sim/math_kernels.h).
      SERENE_MATH_KERNELS=native "$BIN/serene-sim" -c "$scenario" --seed "$s" --runs "$policy" --compute-ms "$compute_ms" \
        --eval-ms "$eval_ms" --switch-us "$switch_us" --out "$OUT/n$n/sim-$s-$i" | grep -E '^  JCT' || true
    done < "$OUT/n$n/calibration-$s.txt"
  done
  if [[ $record -eq 1 ]]; then
    $PY scripts/evidence.py record-validation "$OUT/n$n" --scenario "n$n"
  fi
done
echo "=== done in $(( $(date +%s) - started )) s; outputs in $OUT"
