#!/usr/bin/env bash
# Serene against Gloo's allreduce over model sizes, row widths and worker
# counts (docs/performance.md): runs `serene-bench comm` for every point of
# the matrix, several times, appends each run's JSON line to OUT.jsonl, then
# writes the Markdown table (OUT.md) and the plot (OUT.png, gnuplot) of the
# medians over runs.
#   bash scripts/comm_sweep.sh                       # 3 runs, results/comm/sweep.*
#   bash scripts/comm_sweep.sh --runs 1 --quick      # small models only
#   bash scripts/comm_sweep.sh --point "4 79510 362" # only this point (workers elements row; repeatable)
#   bash scripts/comm_sweep.sh --plot-only           # redo table and plot from OUT.jsonl
# The published figure (docs/performance.md) is made from these JSON lines by
# scripts/evidence.py record-comm (scripts/reproduce.sh does both).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=build/bin
OUT=results/comm/sweep
RUNS=3
QUICK=0
PLOT_ONLY=0
ONLY=()
usage() { sed -n '2,12p' "$0"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin-dir) BIN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --point) ONLY+=("$2"); shift 2 ;;
    --plot-only) PLOT_ONLY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "comm_sweep.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "comm_sweep.sh: --runs '$RUNS': expected a positive number" >&2; exit 2; }
[[ -x "$BIN/serene-bench" ]] || { echo "comm_sweep.sh: no $BIN/serene-bench; build first (README.md)" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"

# workers elements row; 362 is the largest row whose IPv4 datagram fits a
# 1500-byte MTU (24 + 4 x 362 = 1472 bytes of UDP payload)
POINTS=(
  "4 79510 4096" "4 79510 362"
  "4 1000000 4096" "4 1000000 362"
  "4 25600000 4096" "4 25600000 362"
  "8 79510 4096" "8 79510 362"
  "8 1000000 4096" "8 1000000 362"
  "8 25600000 4096"
)
if (( ${#ONLY[@]} )); then
  for p in "${ONLY[@]}"; do
    [[ "$p" =~ ^[1-9][0-9]*\ [1-9][0-9]*\ [1-9][0-9]*$ ]] || { echo "comm_sweep.sh: --point '$p': expected \"workers elements row\"" >&2; exit 2; }
  done
  POINTS=("${ONLY[@]}")
fi
if (( QUICK )); then
  small=()
  for p in "${POINTS[@]}"; do read -r w e r <<< "$p"; (( e > 1000000 )) || small+=("$p"); done
  POINTS=("${small[@]}")
fi
iters_for() {  # enough iterations for a median, few for the big models
  if (( $1 <= 100000 )); then echo "60 5"; elif (( $1 <= 1000000 )); then echo "25 3"; else echo "8 2"; fi
}

if (( ! PLOT_ONLY )); then
  : > "$OUT.jsonl"
  total=$(( ${#POINTS[@]} * RUNS )); n=0
  for run in $(seq 1 "$RUNS"); do
    for p in "${POINTS[@]}"; do
      read -r w e r <<< "$p"
      read -r iters warmup <<< "$(iters_for "$e")"
      n=$((n + 1))
      echo "[$n/$total] run $run: $w workers, $e elements, rows of $r ($iters iterations)" >&2
      line=$("$BIN/serene-bench" comm --workers "$w" --elements "$e" --row "$r" --iters "$iters" \
               --warmup "$warmup" | tail -1)
      echo "$line" | sed "s/^{/{\"run\":$run,/" >> "$OUT.jsonl"
    done
  done
fi

# Medians over runs, the spread of the ratio, a table and the plot's data.
/usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(out + ".jsonl") if l.strip()]
# Gloo's bcube is left out: it reads past its buffers (runs before it was
# refused have its times; they do not count).
for r in rows:
    each = {k: v for k, v in r["gloo_each_ms"].items() if k != "bcube"}
    best = min(each, key=each.get)
    r["gloo_algorithm"], r["gloo_ms"] = best, each[best]
    r["serene_over_gloo"] = r["serene_ms"] / each[best]
groups = {}
for r in rows:
    groups.setdefault((r["workers"], r["elements"], r["row"]), []).append(r)
med = lambda xs: statistics.median(xs)
with open(out + ".md", "w") as md, open(out + ".dat", "w") as dat:
    md.write("| workers | elements | row | runs | Serene ms | Gloo best ms (algorithm) | Gloo default ms "
             "| Serene / Gloo best (min-max) | Serene / Gloo default | READs re-sent / NACKs | switch CPU ms/iter "
             "| CPU ms/iter: Serene (ranks + switch) / Gloo best |\n")
    md.write("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for (w, e, row), rs in sorted(groups.items()):
        s = med([r["serene_ms"] for r in rs]); g = med([r["gloo_ms"] for r in rs])
        d = med([r["gloo_each_ms"]["default"] for r in rs])
        ratios = [r["serene_over_gloo"] for r in rs]
        algos = sorted({r["gloo_algorithm"] for r in rs})
        # CPU per iteration, all processes (runs before serene-bench comm
        # reported it have none).
        cpu = [r for r in rs if "serene_cpu_ms" in r]
        cpu_text = (f"{med([r['serene_cpu_ms'] for r in cpu]):.2f} "
                    f"({med([r['serene_ranks_cpu_ms'] for r in cpu]):.2f} + "
                    f"{med([r['switch_cpu_ms'] for r in cpu]):.2f}) / "
                    f"{med([r['gloo_cpu_ms'] for r in cpu]):.2f}") if cpu else "-"
        md.write(f"| {w} | {e:,} | {row} | {len(rs)} | {s:.2f} | {g:.2f} ({', '.join(algos)}) | {d:.2f} "
                 f"| **{med(ratios):.2f}** ({min(ratios):.2f}-{max(ratios):.2f}) | {s/d:.2f} "
                 f"| {sum(r['read_retransmits'] for r in rs)} / {sum(r['nacks'] for r in rs)} | {med([r['switch_cpu_ms'] for r in rs]):.2f} "
                 f"| {cpu_text} |\n")
        dat.write(f"{w} {e} {row} {s} {g} {d}\n")
PY

if command -v gnuplot >/dev/null; then
  gnuplot <<GP
set terminal pngcairo size 900,560 noenhanced
set output "$OUT.png"
set title "Per-iteration time vs model size, 4 workers on 2 cores (median over runs)"
set logscale xy
set xlabel "model size (int32 elements)"
set ylabel "ms per iteration (pull+push+clock / allreduce)"
set key top left
set grid
plot "< awk '\$1==4 && \$3==4096' $OUT.dat" using 2:4 with linespoints lw 2 title "Serene, rows of 4096", \
     "< awk '\$1==4 && \$3==362' $OUT.dat" using 2:4 with linespoints lw 2 title "Serene, rows of 362 (1500-byte MTU)", \
     "< awk '\$1==4 && \$3==4096' $OUT.dat" using 2:5 with linespoints lw 2 title "Gloo, best algorithm", \
     "< awk '\$1==4 && \$3==4096' $OUT.dat" using 2:6 with linespoints lw 2 title "Gloo, default (PyTorch's)"
GP
fi
echo "wrote $OUT.jsonl, $OUT.md${OUT:+, $OUT.png}" >&2
cat "$OUT.md"
