#!/usr/bin/env bash
# Installs every Debian package Serene needs to build, test and run.
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # test and benchmark frameworks; clang for the libFuzzer targets (fuzz/)
  libgtest-dev libgmock-dev libbenchmark-dev clang-14 libclang-rt-14-dev
  # libraries
  libcli11-dev libtomlplusplus-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  liburing-dev zlib1g-dev
  liblua5.4-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcpp-httplib-dev
  libtorch-dev libgloo-dev
  # the Python package (python/, docs/python.md), for Debian's /usr/bin/python3
  pybind11-dev python3-dev python3-numpy python3-torch python3-pytest
  # libtorch's BLAS: Debian links the reference BLAS, 15-20x slower for the
  # MLP; OpenBLAS (OpenMP flavour, so torch's thread setting limits it) takes
  # over libblas.so.3 through the alternatives system.
  libopenblas0-openmp
  # data and plots
  dataset-fashion-mnist gnuplot-nox
  # commands the scripts and tests run (tests/scripts/commands_provided_test.py
  # checks that every one comes from a package here, or one these pull in)
  python3 curl procps
  # network namespaces for multi-host tests
  iproute2
)

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO="sudo"
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
