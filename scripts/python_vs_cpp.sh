#!/usr/bin/env bash
# The Python example against the C++ serene-train, both launched by
# `python3 -m serene.launch` on a fresh switch: N ranks, SYNC, the MLP on
# Fashion-MNIST with the same hyper-parameters and step count; prints both
# final test accuracies (docs/python.md, "Same accuracy as serene-train";
# scripts/reproduce.sh --only python:vs-cpp records seeds 1-5 with
# evidence.py record-python-vs-cpp OUT).
#   bash scripts/python_vs_cpp.sh [--nproc 4] [--steps 1000] [--seed 1] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
nproc=4 steps=1000 seed=1 out=
while [[ $# -gt 0 ]]; do
  case $1 in
    --nproc) nproc=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "python_vs_cpp.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x build/bin/serene-train && -d build/python/serene ]] || {
  echo "python_vs_cpp.sh: build first (cmake --preset default && cmake --build build)" >&2; exit 2; }
if [[ -z $out ]]; then
  out=$(mktemp -d /tmp/serene-py-vs-cpp.XXXXXX)
else
  mkdir -p "$out"
fi
export PYTHONPATH=$PWD/build/python
launch=(/usr/bin/python3 -m serene.launch --nproc "$nproc" --elements 79510)
common=(--steps "$steps" --eval-every "$steps" --seed "$seed" --lr 0.04 --batch 256)

echo "== C++ serene-train, $nproc ranks, $steps steps"
"${launch[@]}" --no-python build/bin/serene-train --backend serene "${common[@]}" \
  --metrics "$out/cpp-{rank}.json" >"$out/cpp.log" 2>&1
echo "== Python examples/train_fashion_mnist.py, $nproc ranks, $steps steps"
"${launch[@]}" examples/train_fashion_mnist.py "${common[@]}" --metrics "$out/py.json" \
  >"$out/py.log" 2>&1

/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
cpp = json.load(open(f"{out}/cpp-0.json"))
py = json.load(open(f"{out}/py.json"))
cpp_acc = [p["accuracy"] for p in cpp["timeline"] if p.get("accuracy") is not None][-1]
py_acc = py["timeline"][-1]["accuracy"]
print(f"C++    final accuracy {cpp_acc:.4f} after {cpp['iterations']} steps, "
      f"{cpp['job_completion_s']:.1f} s")
print(f"Python final accuracy {py_acc:.4f} after {py['iterations']} steps, "
      f"{py['job_completion_s']:.1f} s")
print(f"difference {100 * (py_acc - cpp_acc):+.2f} pt (logs and metrics in {out})")
PY
