#!/usr/bin/env bash
# p4/serene.p4 compiles with p4c-bm2-ss without a single warning, at both
# row widths (64 values per packet, the default, and -DSERENE_MAX_W=32).
# Exits 77 (ctest: skipped) when the P4 toolchain is not installed.
set -euo pipefail
P4=${P4:-/opt/p4}
HERE=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x $P4/bin/p4c-bm2-ss ]]; then
  echo "SKIPPED: p4c-bm2-ss is not installed in $P4 (docs/p4.md \"The toolchain\")"
  exit 77
fi
OUT=$(mktemp -d /tmp/serene-p4c.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
for width in 64 32; do
  if ! "$P4/bin/p4c-bm2-ss" --std p4-16 --target bmv2 --arch v1model -DSERENE_MAX_W=$width \
      -o "$OUT/serene$width.json" "$HERE/serene.p4" >"$OUT/log" 2>&1; then
    cat "$OUT/log"; echo "FAIL: serene.p4 (SERENE_MAX_W=$width) does not compile"; exit 1
  fi
  if [[ -s $OUT/log ]]; then
    cat "$OUT/log"; echo "FAIL: p4c-bm2-ss printed warnings (SERENE_MAX_W=$width)"; exit 1
  fi
  echo "serene.p4 with SERENE_MAX_W=$width: compiled, no warnings"
done
