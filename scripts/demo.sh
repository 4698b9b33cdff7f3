#!/usr/bin/env bash
# The main job: installs the Debian packages, builds Serene, and runs the demo
# experiment (README.md, docs/experiments.md): a serene-switch and 4 MLP
# training ranks on Fashion-MNIST with slow_worker stragglers, trained to 84 %
# test accuracy under SYNC, then SSP(10), then ADAPTIVE (the policy script
# policies/adaptive.lua changes the window while the ranks train), then with
# the Gloo allreduce baseline; prints job completion time, waiting time,
# iterations, final accuracy and the policy changes side by side and writes
# them under results/.
#   bash scripts/demo.sh            # the embedded default scenario
#   bash scripts/demo.sh --quick    # any serene-experiment flags are passed on
#   bash scripts/demo.sh --scenario slowdown-floor   # the second demo
#                                   # (experiments/slowdown-floor.toml, ~7 min): where
#                                   # staleness costs and a rank slows a third of the
#                                   # way, so no fixed policy is right throughout
#                                   # (docs/experiments.md)
# SERENE_STOP_AFTER_CONFIGURE=1 stops after the install check and the configure
# step (the clean-clone test, tests/scripts/clean_clone_test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# --scenario NAME is experiments/NAME.toml; everything else goes to serene-experiment.
args=()
while [[ $# -gt 0 ]]; do
  if [[ $1 == --scenario || $1 == --scenario=* ]]; then
    if [[ $1 == --scenario=* ]]; then name=${1#--scenario=}; shift
    else
      [[ $# -ge 2 ]] || { echo "demo.sh: --scenario needs a name (one of: $(cd experiments && ls *.toml | sed 's/\.toml$//' | tr '\n' ' '))" >&2; exit 2; }
      name=$2; shift 2
    fi
    if [[ ! -f experiments/$name.toml ]]; then
      echo "demo.sh: no scenario '$name' (experiments/$name.toml); the scenarios are: $(cd experiments && ls *.toml | sed 's/\.toml$//' | tr '\n' ' ')" >&2
      exit 2
    fi
    args+=(-c "experiments/$name.toml")
  else
    args+=("$1"); shift
  fi
done

bash scripts/install-deps.sh
cmake --preset default >/dev/null
if [[ ${SERENE_STOP_AFTER_CONFIGURE:-0} == 1 ]]; then
  # tests/scripts/clean_clone_test.sh: the steps before the long build, from a clean clone.
  echo "demo.sh: configured; stopping here (SERENE_STOP_AFTER_CONFIGURE=1)"
  exit 0
fi
cmake --build --preset default

build/bin/serene-experiment "${args[@]}"

echo
echo "The switch's aggregation benchmark is build/bin/serene-bench (docs/client.md#serene-bench)."
echo "Python: PYTHONPATH=build/python /usr/bin/python3 -m serene.launch --nproc 4 --elements 79510 \\"
echo "          examples/train_fashion_mnist.py --steps 1000    (docs/python.md)"
