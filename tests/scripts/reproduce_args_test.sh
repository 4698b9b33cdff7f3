#!/usr/bin/env bash
# scripts/reproduce.sh --policy-only: refused with --tables and with an --only
# part that has no policy runs to re-run alone (exit 2, nothing run); --parts
# lists only the simulated parts with a policy script. (The re-run itself is
# serene-sim --run-filter, tests/sim/sim_e2e_test.cc, and the witness's check
# evidence.py record-sim --witness, tests/docs/evidence_records_test.py.)
set -uo pipefail
source "$(dirname "$0")/refused_lib.sh"

check_refused() {  # check_refused WANT_TEXT ARGS...
  expect_refused reproduce.sh "$@"
  [[ $out != *"=== reproduce.sh"* ]] || fail "reproduce.sh ${*:2}: went on to run: $out"
}
check_refused "--policy-only runs simulations, --tables none" --policy-only --tables
check_refused "--only micro with --policy-only" --policy-only --only micro
check_refused "--only demo-real:demo with --policy-only" --only policies-sim:cnn --policy-only --only demo-real:demo

parts=$(cd /tmp && timeout 20 bash "$root/scripts/reproduce.sh" --parts --policy-only) ||
  fail "reproduce.sh --parts --policy-only failed: $parts"
want="policies-sim:demo policies-sim:paper policies-sim:heterogeneous policies-sim:failure policies-sim:momentum policies-sim:slowdown policies-sim:comego policies-sim:cnn paper-scale:n8 paper-scale:n16 paper-scale:n64-timing paper-scale:heterogeneous-n8 paper-scale:failure-short"
[[ $(echo $parts) == "$want" ]] || fail "reproduce.sh --parts --policy-only lists: $(echo $parts); expected: $want"
echo "PASS: reproduce.sh --policy-only refuses parts without policy runs and lists the rest"
