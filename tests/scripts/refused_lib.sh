# Sourced by the *_args_test.sh scripts: `root` (the checkout), `fail`, and
# `expect_refused SCRIPT WANT_TEXT ARGS...`, which runs scripts/SCRIPT with
# ARGS from /tmp and fails unless it exits 2 with WANT_TEXT in its output
# (left in `out` for further checks).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_refused() {
  local script=$1 want=$2 rc
  shift 2
  out=$(cd /tmp && timeout 20 bash "$root/scripts/$script" "$@" 2>&1); rc=$?
  [[ $rc -eq 2 ]] || fail "$script $*: exit $rc, expected 2; output: $out"
  [[ $out == *"$want"* ]] || fail "$script $*: output lacks '$want': $out"
}
