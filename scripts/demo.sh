#!/usr/bin/env bash
# The main job: installs the Debian packages, builds Serene, and runs the
# demo (see README.md).
#   bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default

bin=build/bin
echo
echo "=== 1. SYNC: 4 worker processes aggregate a 100k-element model for 200 clocks ==="
"$bin/serene-bench" --workers 4 --elements 100000 --row 4096 --clocks 200 --policy sync --quiet-switch
echo
echo "=== 2. The same under 5% loss, duplication and reordering at the switch port ==="
"$bin/serene-bench" --workers 4 --elements 100000 --row 4096 --clocks 200 --policy sync \
  --fault drop=0.05,dup=0.05,reorder=0.05,seed=1,dir=both --quiet-switch
echo
echo "=== 3. Rank 3 straggles (20 ms per step): SYNC vs SSP(4) vs ASYNC ==="
for p in sync ssp:4 async; do
  echo "--- policy $p"
  "$bin/serene-bench" --workers 4 --elements 100000 --row 4096 --clocks 100 --policy "$p" \
    --straggler 3 --straggle-ms 20 --quiet-switch | tail -1
done
