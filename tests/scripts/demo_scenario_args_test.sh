#!/usr/bin/env bash
# scripts/demo.sh --scenario NAME: an unknown or missing name is refused with
# the list of scenarios and exit 2, before anything is installed or built.
# (A known name runs the whole demo; scripts.clean_clone covers the steps
# before the build, and docs/experiments.md the run itself.)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

check_refused() {  # check_refused WANT_TEXT ARGS...
  local want=$1; shift
  local out rc
  out=$(cd /tmp && timeout 20 bash "$root/scripts/demo.sh" "$@" 2>&1); rc=$?
  [[ $rc -eq 2 ]] || fail "demo.sh $*: exit $rc, expected 2; output: $out"
  [[ $out == *"$want"* ]] || fail "demo.sh $*: output lacks '$want': $out"
  [[ $out == *slowdown* && $out == *momentum* ]] || fail "demo.sh $*: does not list the scenarios: $out"
  [[ $out != *apt-get* && $out != *"-- Configuring"* && $out != *install-deps* ]] || fail "demo.sh $*: went on to install or configure: $out"
}
check_refused "no scenario 'nope' (experiments/nope.toml)" --scenario nope
check_refused "no scenario 'nope'" --scenario=nope
check_refused "--scenario needs a name" --scenario
echo "PASS: demo.sh --scenario refuses unknown and missing names"
