#!/usr/bin/env bash
# Packet rate of the P4 switch in BMv2 beside the software switch, in one run
# (for the record: BMv2 is a reference model, not a fast path).
#
#   sudo p4/bench.sh BUILD_DIR [CLOCKS]
#
# For each switch: serene-bench, 2 worker processes, a SYNC job of 100 rows
# of 64 values (6,400 elements), CLOCKS clocks (default 100), every pull
# checked. Requests per clock per rank: 100 READs + 100 INCs + 1 CLOCK
# (retransmissions not counted).
# Prints a table and the ratio; the last line is JSON.
set -euo pipefail
BUILD=$(cd "${1:?usage: bench.sh BUILD_DIR [CLOCKS]}" && pwd)
CLOCKS=${2:-100}
HERE=$(cd "$(dirname "$0")" && pwd)
ROWS=100

if [[ ${3:-} == one ]]; then
  TARGET=$4
  WINDOW=$5
  source "$HERE/switch_env.sh"
  start_switch "id=1,workers=2,elements=$((ROWS * 64)),row=64,key_file=$(key_file 0x5e4e)" >/dev/null
  out=$("${RUN[@]}" env SERENE_KEY=0x5e4e "$BIN/serene-bench" --switch "$SWITCH" --job 1 --workers 2 \
    --elements $((ROWS * 64)) --row 64 --clocks "$CLOCKS" --window "$WINDOW") \
    || { echo "$out"; fail "serene-bench"; }
  # "OK: 100 clocks in 1.234 s (81.0 clocks/s), ..."
  echo "$out" | grep -o "^OK: [0-9]* clocks in [0-9.]* s" | awk '{print $5}'
  exit 0
fi

declare -A secs
# READs in flight per rank: the client's default for the software switch;
# 8 for BMv2, whose ~1,500 packets/s turn a window of 128 into spurious
# retransmissions (30 clocks: 0.25 s/clock at 8, 0.29 at 32, 0.88 at 128).
declare -A window=([software]=128 [bmv2]=8)
for t in software bmv2; do
  secs[$t]=$(bash "$0" "$BUILD" "$CLOCKS" one "$t" "${window[$t]}" | tail -1)
done
/usr/bin/python3 - "$CLOCKS" "$ROWS" "${secs[software]}" "${secs[bmv2]}" <<'PY'
import json, sys
clocks, rows, sw, bm = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
requests = clocks * 2 * (2 * rows + 1)  # both ranks: READs, INCs, CLOCK
print(f"{'switch':<22}{'window':>7}{'time s':>10}{'requests/s':>14}{'clocks/s':>10}")
for name, w, t in (("serene-switch", 128, sw), ("simple_switch (P4)", 8, bm)):
    print(f"{name:<22}{w:>7}{t:>10.3f}{requests / t:>14.0f}{clocks / t:>10.1f}")
print(f"the software switch is {bm / sw:.1f}x faster")
print(json.dumps({"clocks": clocks, "rows": rows, "software_rps": round(requests / sw),
                  "bmv2_rps": round(requests / bm), "software_over_bmv2": round(bm / sw, 2)}))
PY
