#!/usr/bin/env bash
# Builds Serene and runs every test, on a fresh Debian 12 machine or an
# existing checkout. Installs the Debian packages first (needs root or sudo).
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset ci
cmake --build --preset ci
ctest --preset ci --parallel 2
