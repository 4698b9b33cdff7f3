#!/usr/bin/env bash
# scripts/p4-toolchain.sh's argument handling and errors, in well under a second: --help, an
# unknown argument, a relative --prefix, a missing snapshot and a snapshot without its pinned
# commit. Covers only what the script does before it builds; the 45-minute build itself is not
# run here (docs/p4.md).
set -euo pipefail
script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/p4-toolchain.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect NAME RC PATTERN -- ARGS...: the script exits RC and prints PATTERN (grep -E).
expect() {
  local name=$1 want_rc=$2 pattern=$3 rc=0
  shift 4
  "$script" "$@" >"$tmp/out" 2>&1 || rc=$?
  if [[ $rc -ne $want_rc ]] || ! grep -qE -- "$pattern" "$tmp/out"; then
    echo "FAIL $name: exit $rc (want $want_rc), output:"
    sed 's/^/  | /' "$tmp/out"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

expect help 0 'Usage: scripts/p4-toolchain.sh' -- --help
expect help_names_pins 0 'p4lang/p4c@[0-9a-f]{12}' -- -h
expect unknown_argument 2 "unknown argument '--bogus'" -- --bogus
expect option_without_value 2 '--prefix needs a directory' -- --prefix
expect relative_prefix 1 "--prefix 'opt' must be an absolute path" -- --prefix opt --check
expect no_snapshot_dir 1 "--snapshots '$tmp/none' is not a directory" -- --snapshots "$tmp/none" --check
mkdir -p "$tmp/empty"
expect missing_snapshot 1 "no snapshot of p4lang/behavioral-model: expected a git directory at $tmp/empty/p4lang\+behavioral-model/repo" \
  -- --snapshots "$tmp/empty" --check --work "$tmp/work"
mkdir -p "$tmp/stale/p4lang+behavioral-model"
git init -q --bare "$tmp/stale/p4lang+behavioral-model/repo"
expect missing_commit 1 "lacks the pinned commit [0-9a-f]{40} of p4lang/behavioral-model" \
  -- --snapshots "$tmp/stale" --check --work "$tmp/work"

[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
