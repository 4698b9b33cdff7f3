#!/usr/bin/env bash
# The switch at many ranks (docs/performance.md): serene-bench with 4..256
# worker processes on one switch (SYNC, a small model, bounded clocks);
# records clocks per second and the switch's CPU per clock, writes OUT.md,
# OUT.jsonl (one JSON line per run of each point, for scripts/evidence.py
# record-scale) and the curve OUT.png (gnuplot, the median of each point).
#   bash scripts/scale_sweep.sh                      # results/scale/sweep.*
#   bash scripts/scale_sweep.sh --ranks "4 64" --clocks 50 --runs 5
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=build/bin
OUT=results/scale/sweep
RANKS="4 16 64 128 256"
CLOCKS=auto  # 400 clocks up to 16 ranks, 100 up to 64, 30 beyond
ELEMENTS=1000
RUNS=1
usage() { sed -n '2,9p' "$0"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin-dir) BIN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --ranks) RANKS="$2"; shift 2 ;;
    --clocks) CLOCKS="$2"; shift 2 ;;
    --elements) ELEMENTS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "scale_sweep.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ -x "$BIN/serene-bench" ]] || { echo "scale_sweep.sh: no $BIN/serene-bench; build first (README.md)" >&2; exit 1; }
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "scale_sweep.sh: --runs must be a positive integer, not '$RUNS'" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"
: > "$OUT.jsonl"
{
  echo "| ranks | run | clocks | clocks/s | switch CPU per clock of all ranks (ms) | per clock of one rank (us) | READs re-sent | CLOCKs re-sent | wall s |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$OUT.md"
for n in $RANKS; do
  clocks=$CLOCKS
  if [[ "$clocks" == auto ]]; then
    if (( n <= 16 )); then clocks=400; elif (( n <= 64 )); then clocks=100; else clocks=30; fi
  fi
  for run in $(seq 1 "$RUNS"); do
  echo "scale_sweep: $n ranks x $clocks clocks of $ELEMENTS elements, run $run of $RUNS..." >&2
  log=$("$BIN/serene-bench" --workers "$n" --elements "$ELEMENTS" --row 256 --clocks "$clocks" --quiet-switch)
  ok=$(grep -E '^(OK|FAILED):' <<< "$log")
  cpu=$(grep -E '^switch CPU' <<< "$log")
  [[ "$ok" == OK:* ]] || { echo "scale_sweep: $n ranks failed:"$'\n'"$log" >&2; exit 1; }
  wall=$(sed -E 's/.* clocks in ([0-9.]+) s.*/\1/' <<< "$ok")
  rate=$(sed -E 's/.*\(([0-9.]+) clocks\/s\).*/\1/' <<< "$ok")
  per_rank=$(sed -E 's/.*: ([0-9.]+) us per clock of one rank.*/\1/' <<< "$cpu")
  per_clock=$(sed -E 's/.* ([0-9.]+) ms per clock of all.*/\1/' <<< "$cpu")
  # Per-rank table rows: columns 8 (re-READ) and 9 (re-CLOCK).
  read -r rereads reclocks < <(awk '$1 ~ /^[0-9]+$/ && NF >= 11 {r += $8; c += $9} END {print r+0, c+0}' <<< "$log")
  echo "| $n | $run | $clocks | $rate | $per_clock | $per_rank | $rereads | $reclocks | $wall |" >> "$OUT.md"
  printf '{"ranks": %d, "run": %d, "clocks": %d, "elements": %d, "clocks_per_s": %s, "switch_cpu_ms_per_clock": %s, "switch_cpu_us_per_rank_clock": %s, "read_retransmits": %d, "clock_retransmits": %d, "wall_s": %s}\n' \
    "$n" "$run" "$clocks" "$ELEMENTS" "$rate" "$per_clock" "$per_rank" "$rereads" "$reclocks" "$wall" >> "$OUT.jsonl"
  done
done
# The curve: the median of each point's runs, drawn as docs/img/scale.png is.
if command -v gnuplot >/dev/null; then
  /usr/bin/python3 scripts/evidence.py plot-scale "$OUT.jsonl" --png "$OUT.png" >/dev/null
fi
cat "$OUT.md"
