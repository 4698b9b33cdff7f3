#!/usr/bin/env bash
# Runs the tests behind every bit-identical claim that involves floating-point
# training math (simulator against real ranks, SYNC training under faults,
# ranks of one job, SYNC training across a switch restart, the Python
# package, BMv2 against the software switch)
# under two forced OpenBLAS kernels and three OpenMP thread settings (the
# machine's default, 1, and 3: more threads than this 2-core machine has), to
# show that what decides the bits is pinned in the code, not taken from the
# machine or the environment (docs/reliability.md, "Determinism").
#
#   bash scripts/determinism.sh [--build-dir build]
#
# The kernels: Haswell (AVX2) and the most recent one the CPU runs among
# Cooperlake (AVX-512 with BF16: its sgemm rounds differently depending on the
# rows a thread is given, which is what once made two threads of one process
# disagree), SkylakeX (AVX-512) and Sandybridge (AVX). A CPU without AVX2
# runs Sandybridge and Prescott. Needs a build (scripts/test.sh makes it);
# about 40 s per combination, six combinations.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) echo "determinism.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -f $build/CTestTestfile.cmake ]] || {
  echo "determinism.sh: no build in '$build' (run: cmake --preset ci && cmake --build --preset ci)" >&2
  exit 2
}

flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { [[ " $flags " == *" $1 "* ]]; }
if has avx2 && has fma; then
  kernels=(Haswell)
  if has avx512f && has avx512bw && has avx512vl && has avx512_bf16; then kernels+=(Cooperlake)
  elif has avx512f && has avx512bw && has avx512vl; then kernels+=(SkylakeX)
  else kernels+=(Sandybridge); fi
elif has avx; then
  kernels=(Sandybridge Prescott)
else
  kernels=(Prescott Core2)
fi

tests='TrainingSimTest|TrainingFaultsTest\.|TrainingRestartTest\.|TrainerGlooTest\.|SereneTrainer\.|SereneTrainAppTest\.|python\.test_torch|p4\.training_compare'
for kernel in "${kernels[@]}"; do
  for threads in default 1 3; do
    echo "== determinism: OPENBLAS_CORETYPE=$kernel OMP_NUM_THREADS=$threads"
    (
      unset OMP_NUM_THREADS
      [[ $threads == default ]] || export OMP_NUM_THREADS=$threads
      export OPENBLAS_CORETYPE=$kernel
      ctest --test-dir "$build" -R "$tests" --parallel 2 --output-on-failure
    )
  done
done
echo "determinism: passed under ${kernels[*]} x OMP_NUM_THREADS unset, 1, 3"
