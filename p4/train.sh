#!/usr/bin/env bash
# Real training through either switch: two serene-train ranks (MLP
# 784-100-10 on Fashion-MNIST, SYNC, seed 1) for STEPS steps against a job of
# rows of 64 values (what the P4 switch carries), then the test accuracy and
# the final model.
#
#   p4/train.sh BUILD_DIR software|bmv2 [STEPS [MODEL]]  # prints "accuracy X";
#                                          # MODEL: where rank 0's final model goes
#   p4/train.sh BUILD_DIR compare [STEPS]  # both; the final models must be equal
#
# Under SYNC every pull is the exact sum of the same updates, so the same
# seed trains bit-identical models through either switch: each run checks
# that its two ranks end with the same model, byte for byte (serene-train
# --save-model: raw float32 in ModelLayout order), and `compare` that the
# software switch and BMv2 trained the same model byte for byte (and the same
# accuracy, which then follows). Exits 77 (ctest: skipped) with the reason
# when the bmv2 target cannot run (root, /opt/p4).
set -euo pipefail
BUILD=$(cd "${1:?usage: train.sh BUILD_DIR software|bmv2|compare [STEPS [MODEL]]}" && pwd)
TARGET=${2:?usage: train.sh BUILD_DIR software|bmv2|compare [STEPS [MODEL]]}
STEPS=${3:-100}
MODEL=${4:-}
HERE=$(cd "$(dirname "$0")" && pwd)

if [[ $TARGET == compare ]]; then
  P4=${P4:-/opt/p4}
  if [[ $(id -u) != 0 || ! -x $P4/bin/simple_switch || ! -x $P4/bin/p4c-bm2-ss ]]; then
    echo "SKIPPED: training through BMv2 needs root and the P4 toolchain in $P4 (docs/p4.md)"
    exit 77
  fi
  MODELS=$(mktemp -d /tmp/serene-p4-models.XXXXXX)
  trap 'rm -rf "$MODELS"' EXIT
  sw=$(bash "$0" "$BUILD" software "$STEPS" "$MODELS/software.bin" | tail -1)
  echo "software switch: $sw"
  bm=$(bash "$0" "$BUILD" bmv2 "$STEPS" "$MODELS/bmv2.bin" | tail -1)
  echo "P4 switch (BMv2): $bm"
  [[ -s $MODELS/software.bin && -s $MODELS/bmv2.bin ]] || { echo "FAIL: a run wrote no model"; exit 1; }
  cmp "$MODELS/software.bin" "$MODELS/bmv2.bin" ||
    { echo "FAIL: the final models differ (software switch vs BMv2)"; exit 1; }
  [[ $sw == accuracy* && $sw == "$bm" ]] || { echo "FAIL: the accuracies differ"; exit 1; }
  echo "train.sh: the same model, byte for byte ($(stat -c %s "$MODELS/software.bin") bytes," \
    "sha256 $(sha256sum <"$MODELS/software.bin" | cut -c1-16)), and the same accuracy through" \
    "both switches after $STEPS steps"
  exit 0
fi

source "$HERE/switch_env.sh"
[[ -x $BIN/serene-train ]] || { echo "SKIPPED: serene-train was not built (SERENE_WITH_TORCH=OFF)"; exit 77; }
OUT=$(mktemp -d /tmp/serene-p4-train.XXXXXX)
start_switch "id=1,workers=2,elements=79510,row=64,key_file=$(key_file 0x5e4e)"
started=$(date +%s)
# BMv2 serves ~1,500 packets/s: 8 READs in flight per rank, not 128, or most
# of a window times out and is sent again (p4/bench.sh).
window=128
[[ $TARGET == bmv2 ]] && window=8
pids=()
for rank in 0 1; do
  "${RUN[@]}" env SERENE_WINDOW=$window "$BIN/serene-train" --backend serene --rank $rank --world-size 2 \
    --switch "$SWITCH" --job 1 --key-file "$KEYS/0x5e4e" --steps "$STEPS" --eval-every "$STEPS" \
    --seed 1 --metrics "$OUT/rank{rank}.json" --save-model "$OUT/model{rank}.bin" \
    --log-level warn >"$OUT/rank$rank.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { cat "$OUT"/rank*.log; fail "a rank failed"; }; done
# SYNC: both ranks pulled the same exact model at the last step.
cmp "$OUT/model0.bin" "$OUT/model1.bin" || fail "the two ranks ended with different models"
[[ -z $MODEL ]] || cp "$OUT/model0.bin" "$MODEL"
acc=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['final_accuracy'])" \
  "$OUT/rank0.json")
echo "$TARGET: $STEPS steps in $(( $(date +%s) - started )) s"
rm -rf "$OUT"
echo "accuracy $acc"
