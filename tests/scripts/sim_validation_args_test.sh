#!/usr/bin/env bash
# scripts/sim_validation.sh: a size without a scenario file, a seed that is
# not a number, an unknown flag and --resimulate without real runs are refused with exit 2 before anything
# runs. (The runs themselves are real-time measurements: docs/simulator.md.)
set -uo pipefail
source "$(dirname "$0")/refused_lib.sh"

check_refused() {  # check_refused WANT_TEXT ARGS...
  local want=$1; shift
  expect_refused sim_validation.sh "$want" --bin-dir /nonexistent "$@"
}
check_refused "no experiments/validation-n3.toml (4, 8, 4-floor and 8-floor exist)" --sizes 3
check_refused "--seeds: 'one' is not a seed" --seeds "1 one"
check_refused "unknown argument '--fast'" --fast
check_refused "--resimulate: no /nonexistent/n4/real-2/results.json" --resimulate /nonexistent --sizes 4 --seeds 2
check_refused "--out and --resimulate name the same directory" --out /tmp/x --resimulate /tmp/y
out=$(timeout 20 bash "$root/scripts/sim_validation.sh" --bin-dir /nonexistent 2>&1); rc=$?
[[ $rc -eq 1 && $out == *"no /nonexistent/serene-experiment; build first"* ]] ||
  fail "without binaries: exit $rc, output: $out"
echo "PASS: sim_validation.sh refuses bad arguments and a missing build"
