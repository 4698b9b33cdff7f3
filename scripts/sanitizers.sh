#!/usr/bin/env bash
# Builds Serene with sanitizers and runs its tests under them
# (docs/sanitizers.md). Needs the Debian packages of scripts/install-deps.sh.
#
#   bash scripts/sanitizers.sh [asan|tsan|all] [ctest args...]   (default: all)
#
# asan  preset asan, build-asan/: AddressSanitizer + UndefinedBehaviorSanitizer
#       (+ LeakSanitizer) over every test of the torch-free build, unit and
#       end-to-end (the serene-switch, serene-ctl and serene-test-rank
#       processes the tests start are sanitized too).
# tsan  preset tsan, build-tsan/: ThreadSanitizer over the tests that run
#       threads: the switch server's loop threads, the silence evictor's
#       thread, the runtime API's concurrent calls and streams, and the
#       end-to-end tests whose serene-switch runs its loop, gRPC, evictor and
#       metrics threads together. The selection is the build preset's target
#       list and the test preset's name filter (CMakePresets.json).
#
# Extra arguments go to ctest (e.g. `tsan -R RuntimeApi`). Every sanitizer
# report, from a test binary or from a process it started, is written under
# build-<mode>/sanitizer-logs/ (log_path) and printed; the run fails if a
# build or a test fails or if any report was written. The last lines are a
# one-line summary per mode; with SERENE_SANITIZERS_SUMMARY=FILE each mode's
# is appended to FILE as a JSON line too (scripts/evidence.py
# record-sanitizers FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }

mode=${1:-all}
[[ $# -gt 0 ]] && shift
case $mode in
  asan) modes=(asan) ;;
  tsan) modes=(tsan) ;;
  all) modes=(asan tsan) ;;
  -h|--help) usage; exit 0 ;;
  *) echo "sanitizers.sh: unknown mode '$mode'" >&2; usage >&2; exit 2 ;;
esac
ctest_args=("$@")

# The seconds in "XmYYs".
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# The first line of a sanitizer report.
REPORT_PATTERN=':[0-9]+:[0-9]+: runtime error: |ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|WARNING: ThreadSanitizer|ThreadSanitizer: (reported|CHECK)'

summaries=()
status=0

run_mode() {
  local m=$1 build=$ROOT/build-$1
  local logs=$build/sanitizer-logs
  local t0 t1 t2 built=ok tests="" reports=0 verdict=PASS

  echo "=== sanitizers: $m: configure and build (preset $m)"
  t0=$(date +%s)
  if ! { cmake --preset "$m" >/dev/null && cmake --build --preset "$m"; }; then
    built=failed
  fi
  t1=$(date +%s)

  rm -rf "$logs" "$build/sanitizer-ctest.log"
  mkdir -p "$logs"
  if [[ $built == ok ]]; then
    echo "=== sanitizers: $m: tests"
    # The test presets set halt_on_error=1 and the suppression files; the
    # log files catch the reports of child processes too, whose output the
    # tests keep to themselves. Not UBSan's: gcc links it as a runtime of its
    # own (libubsan.so) that ignores log_path beside libasan.so, and setting
    # it would redirect ASan's reports instead. UBSan reports go to stderr and
    # kill the process (-fno-sanitize-recover), so they are counted in the
    # test output below (docs/sanitizers.md, "How a report fails the run").
    local rc=0
    ASAN_OPTIONS="log_path=$logs/asan" \
    LSAN_OPTIONS="log_path=$logs/asan" \
    TSAN_OPTIONS="log_path=$logs/tsan" \
      ctest --preset "$m" --parallel 2 "${ctest_args[@]}" 2>&1 | tee "$build/sanitizer-ctest.log" ||
      rc=$?
    [[ $rc -eq 0 ]] || verdict=FAIL
    tests=$(grep -Eo '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' \
              "$build/sanitizer-ctest.log" | tail -1 || true)
    [[ -n $tests ]] || { tests="ctest did not run"; verdict=FAIL; }
  else
    verdict=FAIL
    tests="build failed"
  fi
  t2=$(date +%s)

  shopt -s nullglob
  local files=("$logs"/*)
  shopt -u nullglob
  reports=${#files[@]}
  # Reports in the test output: UBSan's, and any a test printed from a
  # child's captured output.
  local in_output=0
  if [[ -f $build/sanitizer-ctest.log ]]; then
    in_output=$(grep -cE "$REPORT_PATTERN" "$build/sanitizer-ctest.log" || true)
  fi
  if [[ $in_output -gt 0 ]]; then
    verdict=FAIL
    reports=$((reports + in_output))
    echo "=== sanitizers: $m: $in_output report(s) in the test output:"
    grep -nE "$REPORT_PATTERN" "$build/sanitizer-ctest.log" | head -n 40
  fi
  if [[ ${#files[@]} -gt 0 ]]; then
    verdict=FAIL
    echo "=== sanitizers: $m: ${#files[@]} report file(s) in $logs"
    local f
    for f in "${files[@]}"; do
      echo "--- $f"
      head -n 80 "$f"
    done
  fi

  [[ $verdict == PASS ]] || status=1
  local times="build $(duration $((t1 - t0))), tests $(duration $((t2 - t1)))"
  summaries+=("sanitizers: $m: $verdict: $tests; $reports sanitizer report(s); $times")
  if [[ -n ${SERENE_SANITIZERS_SUMMARY:-} ]]; then
    local run=0 failed=0
    if [[ $tests =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
      failed=${BASH_REMATCH[1]} run=${BASH_REMATCH[2]}
    fi
    printf '{"mode": "%s", "passed": %s, "tests": %d, "failed": %d, "reports": %d, "build_s": %d, "tests_s": %d, "ctest_args": "%s"}\n' \
      "$m" "$([[ $verdict == PASS ]] && echo true || echo false)" "$run" "$failed" "$reports" \
      $((t1 - t0)) $((t2 - t1)) "${ctest_args[*]}" >>"$SERENE_SANITIZERS_SUMMARY"
  fi
}

for m in "${modes[@]}"; do
  run_mode "$m"
done
printf '%s\n' "${summaries[@]}"
exit $status
