#!/usr/bin/env bash
# scripts/demo.sh --scenario NAME: an unknown or missing name is refused with
# the list of scenarios and exit 2, before anything is installed or built.
# (A known name runs the whole demo; scripts.clean_clone covers the steps
# before the build, and docs/experiments.md the run itself.)
set -uo pipefail
source "$(dirname "$0")/refused_lib.sh"

check_refused() {  # check_refused WANT_TEXT ARGS...
  expect_refused demo.sh "$@"
  shift
  [[ $out == *slowdown* && $out == *momentum* ]] || fail "demo.sh $*: does not list the scenarios: $out"
  [[ $out != *apt-get* && $out != *"-- Configuring"* && $out != *install-deps* ]] || fail "demo.sh $*: went on to install or configure: $out"
}
check_refused "no scenario 'nope' (experiments/nope.toml)" --scenario nope
check_refused "no scenario 'nope'" --scenario=nope
check_refused "--scenario needs a name" --scenario
echo "PASS: demo.sh --scenario refuses unknown and missing names"
