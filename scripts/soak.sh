#!/usr/bin/env bash
# Soak: one serene-switch with fault injection at its ports serves two jobs of
# 8 ranks each (two serene-bench runs side by side against the same switch),
# round after round until the time is up. Each round creates both jobs through
# the runtime API (serene-ctl job create: a fresh key each time), runs them,
# checks the switch's counters for them, and deletes them. Meanwhile the
# switch's RSS is sampled every few seconds.
#
# At the end it checks and prints:
#   - every serene-bench run exited 0 with every rank OK (none stuck: each run
#     is bounded by --run-timeout, a run that reaches it is a stuck rank);
#   - after every round, per job and rank: INC rows applied = rows x (completed
#     clock + 1 for rank 0's seed), i.e. every INC applied exactly once;
#     clocks completed = completed clock + 1; INC requests = applied +
#     duplicates + stale copies (+ the drops any request may get);
#   - the fault injectors' books once nothing is pending (after every round,
#     from the metrics endpoint, and at the end from the exit counters):
#     offered + duplicated = delivered + dropped, per direction;
#   - the faults fired: in every round, each fault the spec configures (drop,
#     dup, reorder, delay with a non-zero value) dropped, duplicated,
#     reordered or delayed datagrams in each direction it names (the
#     switch's counters grew since the round before), and where it loses
#     datagrams every run's ranks retransmitted; the same for the whole run
#     from the exit counters. A --fault the switch ignored fails the soak;
#   - memory flat: the last RSS sample is within --rss-margin of the first
#     sample after warm-up (the first round).
# The summary goes to OUT/summary.json too (scripts/evidence.py record-soak).
# Exit 0 if all hold, 1 on any violation, 2 on bad usage or missing binaries.
#
#   scripts/soak.sh [--seconds S] [--bin-dir DIR] [--out DIR] [--fault SPEC]
#                   [--elements E] [--clocks C] [--sample S] [--rss-margin KIB]
set -euo pipefail

seconds=300
bin_dir=""
out=""
fault="drop=0.05,dup=0.05,reorder=0.05,delay=0..10ms,seed=7,dir=both"
workers=8
elements=20000
row=256
clocks=40
sample=3
run_timeout=120
rss_margin_kib=""   # default: the larger of 4 MiB and 5 % of the warm-up sample

usage() {
  sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --fault) fault="$2"; shift 2 ;;
    --elements) elements="$2"; shift 2 ;;
    --clocks) clocks="$2"; shift 2 ;;
    --sample) sample="$2"; shift 2 ;;
    --run-timeout) run_timeout="$2"; shift 2 ;;
    --rss-margin) rss_margin_kib="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$seconds" "$elements" "$clocks" "$sample" "$run_timeout"; do
  [[ "$n" =~ ^[0-9]+$ && "$n" -gt 0 ]] || { echo "soak.sh: '$n' is not a positive integer" >&2; exit 2; }
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="${bin_dir:-$repo/build/bin}"
for b in serene-switch serene-bench serene-ctl; do
  [[ -x "$bin_dir/$b" ]] || { echo "soak.sh: $bin_dir/$b not found; build it or pass --bin-dir" >&2; exit 2; }
done
out="${out:-$(mktemp -d "${TMPDIR:-/tmp}/serene-soak.XXXXXX")}"
mkdir -p "$out"

rows=$(( (elements + row - 1) / row ))

# What the fault spec configures: the directions it names and the faults with
# a non-zero value, as the injector's counter names (net/fault_injector.h).
spec_value() { sed -nE "s/(^|.*,)$1=([^,]*).*/\2/p" <<<"$fault"; }
nonzero() { [[ "$1" =~ [1-9] ]]; }
fault_dirs=()
fault_kinds=()
if [[ -n "$fault" && "$fault" != none && "$fault" != off ]]; then
  case "$(spec_value dir)" in
    tx) fault_dirs=(tx) ;;
    both) fault_dirs=(rx tx) ;;
    *) fault_dirs=(rx) ;;
  esac
  nonzero "$(spec_value drop)" && fault_kinds+=(dropped)
  nonzero "$(spec_value dup)$(spec_value duplicate)" && fault_kinds+=(duplicated)
  nonzero "$(spec_value reorder)" && fault_kinds+=(reordered)
  delay=$(spec_value delay)
  nonzero "${delay##*..}" && fault_kinds+=(delayed)
fi
lossy=0
[[ " ${fault_kinds[*]} " == *" dropped "* ]] && lossy=1
violations=0
violation() {
  echo "VIOLATION: $*" | tee -a "$out/violations.txt" >&2
  violations=$((violations + 1))
}

# --- the switch -------------------------------------------------------------
"$bin_dir/serene-switch" --bind 127.0.0.1 --port 0 --control 127.0.0.1:0 \
  --metrics 127.0.0.1:0 --fault "$fault" --log-level info \
  >"$out/switch.counters" 2>"$out/switch.log" &
switch_pid=$!
sampler_pid=""
cleanup() {
  [[ -n "$sampler_pid" ]] && kill "$sampler_pid" 2>/dev/null || true
  kill "$switch_pid" 2>/dev/null || true
}
trap cleanup EXIT

# The word after `prefix` in the switch's log, once it is there.
log_word() {
  local prefix="$1" word=""
  for _ in $(seq 1 200); do
    word=$(grep -o "$prefix[^ ]*" "$out/switch.log" 2>/dev/null | head -1 | sed "s|^$prefix||") || true
    [[ -n "$word" ]] && { echo "$word"; return 0; }
    kill -0 "$switch_pid" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}
addr=$(log_word "listening on ") || { echo "soak.sh: serene-switch did not start:" >&2; cat "$out/switch.log" >&2; exit 1; }
control=$(log_word "runtime API at ") || { echo "soak.sh: no runtime API address in the switch's log" >&2; exit 1; }
metrics=$(log_word "metrics at ") || { echo "soak.sh: no metrics address in the switch's log" >&2; exit 1; }
ctl() { "$bin_dir/serene-ctl" --control "$control" "$@"; }

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$switch_pid/status" 2>/dev/null || echo 0; }
started=$(date +%s.%N)
elapsed() { awk -v s="$started" -v n="$(date +%s.%N)" 'BEGIN {printf "%.1f", n - s}'; }
(
  while kill -0 "$switch_pid" 2>/dev/null; do
    echo "$(elapsed) $(rss_kib)"
    sleep "$sample"
  done
) >"$out/rss.tsv" &
sampler_pid=$!

echo "soak: serene-switch pid $switch_pid on $addr (runtime API $control, $metrics)"
echo "soak: fault $fault"
echo "soak: 2 jobs x $workers ranks, $elements elements ($rows rows of $row), $clocks clocks per run, for ${seconds} s; logs in $out"

# --- one round ----------------------------------------------------------------
# Checks one job's counters in a metrics scrape; prints "applied dups" totals.
check_job() {
  local scrape="$1" job="$2" policy="$3" round="$4"
  awk -v job="$job" -v rows="$rows" -v clocks="$clocks" -v policy="$policy" -v round="$round" '
    function label(s, name,   m) {
      if (match(s, name "=\"[^\"]*\"")) { m = substr(s, RSTART, RLENGTH); sub(/^[^"]*"/, "", m); sub(/"$/, "", m); return m }
      return ""
    }
    $1 ~ /^serene_/ && label($1, "job_id") == job {
      name = $1; sub(/\{.*/, "", name); r = label($1, "rank")
      if (name == "serene_rank_done_clock") done[r] = $2
      else if (name == "serene_rank_incs_applied_total") inc[r] = $2
      else if (name == "serene_rank_incs_duplicate_total") dup[r] = $2
      else if (name == "serene_rank_clocks_total") clk[r] = $2
      else if (name == "serene_job_requests_total" && label($1, "op") == "INC") incs_in = $2
      else if (name == "serene_job_drops_total") drops[label($1, "reason")] = $2
      else if (name == "serene_job_rows") jrows = $2
    }
    END {
      bad = 0
      if (jrows != rows) { printf "round %d job %d: %s rows, expected %d\n", round, job, jrows, rows; bad = 1 }
      applied = 0; dups = 0; n = 0
      for (r in done) {
        n++
        want = rows * (done[r] + (r == 0 ? 1 : 0))
        if (inc[r] != want) { printf "round %d job %d rank %s: %d INC rows applied, expected %d (rows x (done %d + seed))\n", round, job, r, inc[r], want, done[r]; bad = 1 }
        if (clk[r] != done[r] + 1) { printf "round %d job %d rank %s: %d clocks completed, expected %d\n", round, job, r, clk[r], done[r] + 1; bad = 1 }
        if ((policy == "sync" && done[r] != clocks) || done[r] < clocks) { printf "round %d job %d rank %s: done %d after %d clocks (%s)\n", round, job, r, done[r], clocks, policy; bad = 1 }
        applied += inc[r]; dups += dup[r]
      }
      if (n == 0) { printf "round %d job %d: no ranks in the metrics\n", round, job; bad = 1 }
      if (dups != drops["inc_duplicate"] + 0) { printf "round %d job %d: %d duplicate INCs per rank, %d in the drops\n", round, job, dups, drops["inc_duplicate"]; bad = 1 }
      other = 0
      for (k in drops) if (k != "inc_duplicate" && k != "inc_stale" && k != "clock_waiting" && k != "bad_clock" && k != "not_released") other += drops[k]
      lo = applied + dups + drops["inc_stale"]
      if (incs_in < lo || incs_in > lo + other) { printf "round %d job %d: %d INC requests, applied %d + duplicates %d + stale %d (+ %d other drops)\n", round, job, incs_in, applied, dups, drops["inc_stale"], other; bad = 1 }
      if (bad) exit 1
      printf "%d %d\n", applied, dups
    }' "$scrape"
}

# "DIR KIND VALUE" for each fault counter (dropped, duplicated, reordered,
# delayed) in a metrics scrape.
fault_counters() {
  awk '/^serene_fault_(dropped|duplicated|reordered|delayed)_total/ {
    name = $1; sub(/\{.*/, "", name); sub(/^serene_fault_/, "", name); sub(/_total$/, "", name)
    d = $1; sub(/.*direction="/, "", d); sub(/".*/, "", d)
    print d, name, $2
  }' "$1"
}
declare -A fired_before=()
# Each configured fault in each configured direction grew since the last call.
check_fired() {
  local scrape="$1" when="$2" d k v
  declare -A now=()
  while read -r d k v; do now[$d,$k]=$v; done < <(fault_counters "$scrape")
  for d in "${fault_dirs[@]}"; do
    for k in "${fault_kinds[@]}"; do
      v=${now[$d,$k]:-0}
      if [[ $v -le ${fired_before[$d,$k]:-0} ]]; then
        violation "$when: faults $d: nothing $k (counter ${fired_before[$d,$k]:-0} -> $v) although --fault $fault configures it"
      fi
      fired_before[$d,$k]=$v
    done
  done
}

# The injectors' books in a metrics scrape (nothing pending).
check_faults() {
  local scrape="$1" when="$2"
  awk -v when="$when" '
    /^serene_fault_(offered|delivered|dropped|duplicated)_total/ {
      name = $1; sub(/\{.*/, "", name); sub(/^serene_fault_/, "", name); sub(/_total$/, "", name)
      d = $1; sub(/.*direction="/, "", d); sub(/".*/, "", d)
      v[d, name] = $2; dirs[d] = 1
    }
    END {
      bad = 0
      for (d in dirs) {
        if (v[d, "offered"] + v[d, "duplicated"] != v[d, "delivered"] + v[d, "dropped"]) {
          printf "%s: faults %s: offered %d + duplicated %d != delivered %d + dropped %d\n", when, d, v[d, "offered"], v[d, "duplicated"], v[d, "delivered"], v[d, "dropped"]; bad = 1
        }
      }
      exit bad
    }' "$scrape"
}

policies_job2=(ssp:4 async sync)
round=0 runs=0 runs_ok=0 clocks_total=0 applied_total=0 dups_total=0 retrans_total=0 nacks_total=0
warm_rss=""
end=$(( $(date +%s) + seconds ))
while [[ $(date +%s) -lt $end ]]; do
  round=$((round + 1))
  p2=${policies_job2[$(( (round - 1) % ${#policies_job2[@]} ))]}
  declare -A policy=([1]=sync [2]=$p2) key=() pid=()
  for j in 1 2; do
    created=$(ctl job create --id "$j" --workers "$workers" --elements "$elements" --row "$row" \
      --policy "${policy[$j]}") || { violation "round $round: job create $j failed: $created"; break 2; }
    key[$j]=$(sed -n 's/^key=//p' <<<"$created")
  done
  for j in 1 2; do
    # The key through the environment: argv is visible to every local user.
    SERENE_KEY=${key[$j]} timeout -k 5 "$run_timeout" "$bin_dir/serene-bench" --switch "$addr" \
      --job "$j" --workers "$workers" --elements "$elements" --row "$row" \
      --clocks "$clocks" --policy "${policy[$j]}" >"$out/round$round-job$j.log" 2>&1 &
    pid[$j]=$!
  done
  for j in 1 2; do
    runs=$((runs + 1))
    log="$out/round$round-job$j.log"
    if wait "${pid[$j]}"; then code=0; else code=$?; fi
    summary=$(grep -E '^(OK|FAILED): ' "$log" | tail -1 || true)
    ranks_ok=$(grep -cE '^ *[0-9]+ +[0-9]+ +[0-9]+ .*  OK$' "$log" || true)
    if [[ $code -eq 124 || $code -eq 137 ]]; then
      violation "round $round job $j (${policy[$j]}): stuck, killed after ${run_timeout} s; see $log"
    elif [[ $code -ne 0 || "$summary" != OK:* || "$ranks_ok" -ne "$workers" ]]; then
      violation "round $round job $j (${policy[$j]}): exit $code, $ranks_ok/$workers ranks OK: $summary; see $log"
    else
      runs_ok=$((runs_ok + 1))
      clocks_total=$((clocks_total + clocks))
      retrans=$(sed -nE 's/.* ([0-9]+) retransmissions, ([0-9]+) NACKs$/\1/p' <<<"$summary")
      retrans_total=$((retrans_total + retrans))
      if [[ $lossy -eq 1 && $retrans -eq 0 ]]; then
        violation "round $round job $j (${policy[$j]}): loss injected ($fault) but no rank retransmitted; see $log"
      fi
      nacks_total=$((nacks_total + $(sed -nE 's/.* ([0-9]+) retransmissions, ([0-9]+) NACKs$/\2/p' <<<"$summary")))
    fi
  done
  # Let delayed and held datagrams drain (the longest delay plus a hold),
  # then read the counters of both jobs before deleting them.
  sleep 0.3
  scrape="$out/metrics-last.txt"
  curl -sf "$metrics" >"$scrape" || violation "round $round: cannot scrape $metrics"
  check_faults "$scrape" "round $round" >"$out/check.txt" || violation "$(cat "$out/check.txt")"
  check_fired "$scrape" "round $round"
  for j in 1 2; do
    if totals=$(check_job "$scrape" "$j" "${policy[$j]}" "$round"); then
      applied_total=$((applied_total + ${totals% *}))
      dups_total=$((dups_total + ${totals#* }))
    else
      violation "$totals"
    fi
    ctl job delete "$j" >/dev/null || violation "round $round: job delete $j failed"
  done
  if [[ -z "$warm_rss" ]]; then
    warm_rss=$(rss_kib)
    warm_at=$(elapsed)
  fi
  unset policy key pid
  [[ $violations -gt 0 ]] && break
done
final_rss=$(rss_kib)
final_at=$(elapsed)

# --- stop and read the exit counters -------------------------------------------
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
sampler_pid=""
kill -TERM "$switch_pid"
if wait "$switch_pid"; then switch_code=0; else switch_code=$?; fi
trap - EXIT
[[ $switch_code -eq 0 ]] || violation "serene-switch exited $switch_code on SIGTERM"
grep -q '=== serene-switch counters ===' "$out/switch.counters" || violation "no exit counters from serene-switch"
while read -r dir offered delivered dropped duplicated; do
  if [[ $((offered + duplicated)) -ne $((delivered + dropped)) ]]; then
    violation "exit counters: faults $dir: offered $offered + duplicated $duplicated != delivered $delivered + dropped $dropped"
  fi
done < <(sed -nE 's/^faults (rx|tx): offered=([0-9]+) delivered=([0-9]+) dropped=([0-9]+) duplicated=([0-9]+) .*/\1 \2 \3 \4 \5/p' "$out/switch.counters")
# ... and the faults fired over the whole run, in every configured direction.
for d in "${fault_dirs[@]}"; do
  line=$(grep "^faults $d: " "$out/switch.counters" || true)
  [[ -n "$line" ]] || { violation "exit counters: no 'faults $d' line although --fault $fault names $d"; continue; }
  for k in "${fault_kinds[@]}"; do
    v=$(sed -nE "s/.* $k=([0-9]+).*/\1/p" <<<"$line")
    [[ "${v:-0}" -gt 0 ]] || violation "exit counters: faults $d: $k=${v:-0} although --fault $fault configures it"
  done
done

# --- memory ---------------------------------------------------------------------
# Samples after warm-up: from the end of the first round on.
post=$(awk -v t="${warm_at:-0}" '$1 >= t && $2 > 0' "$out/rss.tsv")
first_rss=$(awk 'NR == 1 {print $2}' <<<"$post")
last_rss=$(awk 'END {print $2}' <<<"$post")
max_rss=$(awk 'BEGIN {m = 0} $2 > m {m = $2} END {print m}' <<<"$post")
samples=$(wc -l <"$out/rss.tsv")
# Least-squares slope of RSS over time after warm-up, KiB per minute.
slope=$(awk '{n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2}
  END {d = n * sxx - sx * sx; printf "%.1f", (n > 1 && d > 0) ? 60 * (n * sxy - sx * sy) / d : 0}' <<<"$post")
if [[ -z "$first_rss" ]]; then
  first_rss=${warm_rss:-0}
  last_rss=$final_rss
fi
margin=${rss_margin_kib:-$(( first_rss / 20 > 4096 ? first_rss / 20 : 4096 ))}
if [[ $((last_rss - first_rss)) -gt $margin ]]; then
  violation "memory: RSS grew from $first_rss KiB (after warm-up) to $last_rss KiB (margin $margin KiB)"
fi

# --- summary -----------------------------------------------------------------------
exit_faults=$(grep '^faults ' "$out/switch.counters" || true)
cat <<EOF

=== soak summary ===
duration: $(printf '%.0f' "$final_at") s ($round rounds), fault $fault
runs: $runs_ok/$runs serene-bench runs OK (2 jobs x $workers ranks, $elements elements = $rows rows, $clocks clocks each)
clocks: $clocks_total; INC rows applied $applied_total, duplicates ignored $dups_total
client: $retrans_total retransmissions, $nacks_total NACKs
faults checked as fired in every round: ${fault_kinds[*]:-none} (${fault_dirs[*]:-no direction})
RSS: $samples samples every ${sample} s; after warm-up (${warm_at:-?} s) first $first_rss KiB, last $last_rss KiB, max $max_rss KiB, slope $slope KiB/min (margin $margin KiB)
exit counters:
$exit_faults
logs: $out
EOF
# The same, as JSON for scripts/evidence.py record-soak (OUT/summary.json).
SOAK_EXIT_FAULTS=$exit_faults /usr/bin/python3 - "$out/summary.json" <<PY
import json, os, re, sys
faults = {}
for line in os.environ["SOAK_EXIT_FAULTS"].splitlines():
    m = re.match(r"faults (\w+): (.*)", line)
    if m:
        faults[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
json.dump({"seconds": round($final_at), "rounds": $round, "runs_ok": $runs_ok, "runs": $runs,
           "jobs": 2, "workers": $workers, "elements": $elements, "rows": $rows,
           "clocks": $clocks, "clocks_total": $clocks_total, "inc_rows_applied": $applied_total,
           "duplicates_ignored": $dups_total, "retransmissions": $retrans_total,
           "nacks": $nacks_total, "fault": "$fault", "rss_first_kib": ${first_rss:-0},
           "rss_last_kib": ${last_rss:-0}, "rss_max_kib": ${max_rss:-0},
           "rss_slope_kib_per_min": ${slope:-0}, "rss_margin_kib": $margin,
           "violations": $violations, "exit_faults": faults}, open(sys.argv[1], "w"), indent=1)
PY
if [[ $violations -gt 0 ]]; then
  echo "FAILED: $violations violation(s):"
  cat "$out/violations.txt"
  exit 1
fi
echo "OK"
