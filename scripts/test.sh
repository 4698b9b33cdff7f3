#!/usr/bin/env bash
# Builds Serene and runs every test, on a fresh Debian 12 machine or an
# existing checkout. Installs the Debian packages first (needs root or sudo).
#   bash scripts/test.sh
#
# In order, stopping at the first failure:
#   1. the ci build (the same configuration of build/ as scripts/demo.sh's,
#      so neither rebuilds the other's work) and every ctest test (unit, end
#      to end, the Python package's pytest suites, the fault matrix and the
#      short soak: labels python, faults and soak);
#   1b. the tests behind the bit-identical claims again, under two forced
#      OpenBLAS kernels and two OpenMP thread counts (scripts/determinism.sh);
#   2. the fuzz targets over their seeds and every past finding, then a
#      bounded fuzzing run of 30 s per target (docs/fuzzing.md);
#   3. the tests under ASan+UBSan and the threaded ones under TSan
#      (docs/sanitizers.md).
# SERENE_STOP_AFTER_CONFIGURE=1 stops after the install check and cmake
# --preset ci (the clean-clone test, tests/scripts/clean_clone_test.sh).
# Each step prints how long it took; the whole takes 31-40 minutes on 2
# cores, 40 with the P4 toolchain installed (docs/reliability.md, "Running it").
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
step() {
  echo
  echo "=== test.sh: $1 ($(( $(date +%s) - started )) s so far)"
}

step "install the Debian packages"
bash scripts/install-deps.sh
step "build (preset ci) and run ctest"
cmake --preset ci
if [[ ${SERENE_STOP_AFTER_CONFIGURE:-0} == 1 ]]; then
  # tests/scripts/clean_clone_test.sh: the steps before the long build, from a clean clone.
  echo "test.sh: configured; stopping here (SERENE_STOP_AFTER_CONFIGURE=1)"
  exit 0
fi
cmake --build --preset ci
ctest --preset ci --parallel 2
step "determinism: the bit-identical tests under other BLAS kernels and thread counts"
bash scripts/determinism.sh
step "fuzz: replay the seeds and the regressions"
bash scripts/fuzz.sh --replay
step "fuzz: smoke run"
bash scripts/fuzz.sh --smoke
step "sanitizers: ASan+UBSan and TSan"
bash scripts/sanitizers.sh all
step "all passed"
