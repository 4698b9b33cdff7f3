#!/usr/bin/env bash
# Builds Serene's libFuzzer targets in build-fuzz/ (clang) and runs them one
# after the other (docs/fuzzing.md).
#
#   scripts/fuzz.sh --smoke                  30 s per target
#   scripts/fuzz.sh [--time S] [--jobs J]    S seconds per target (default 600), J processes
#   scripts/fuzz.sh --target pipeline ...    only that target (decode, pipeline)
#   scripts/fuzz.sh --replay                 run each target once over its seeds and
#                                            fuzz/regressions/<target>/, no fuzzing
#   scripts/fuzz.sh --summary FILE ...       append a JSON line per target fuzzed to FILE
#                                            (scripts/evidence.py record-fuzz FILE)
#
# The seeds (fuzz/corpus/<target>/ plus a fresh make_corpus) are copied to a
# scratch directory, so the repository is never modified. Exits non-zero on
# any finding and prints the path of the crashing input; its scratch
# directory is then kept. Needs clang-14 and libclang-rt-14-dev (libFuzzer).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${SERENE_FUZZ_BUILD:-$ROOT/build-fuzz}
TIME=600
JOBS=1
TARGETS=(decode pipeline)
REPLAY=0
SUMMARY=

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) TIME=30 ;;
    --time) TIME=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --target) TARGETS=("$2"); shift ;;
    --replay) REPLAY=1 ;;
    --summary) SUMMARY=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for t in "${TARGETS[@]}"; do
  [[ $t == decode || $t == pipeline ]] || { echo "fuzz.sh: unknown target '$t'" >&2; exit 2; }
done

# Toolchain: clang-14 and its libFuzzer runtime (Debian: clang-14, libclang-rt-14-dev).
if ! command -v clang++-14 >/dev/null; then
  echo "fuzz.sh: clang++-14 not found; install clang-14 and libclang-rt-14-dev" >&2
  exit 2
fi
if ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  echo "fuzz.sh: libFuzzer's runtime is missing; install libclang-rt-14-dev" >&2
  exit 2
fi

if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSERENE_FUZZ=ON -DSERENE_WITH_TORCH=OFF -DSERENE_WITH_PYTHON=OFF >/dev/null
fi
nice cmake --build "$BUILD" -j "${SERENE_FUZZ_BUILD_JOBS:-2}" \
  --target decode_fuzzer pipeline_fuzzer make_corpus

WORK=$(mktemp -d "${TMPDIR:-/tmp}/serene-fuzz.XXXXXX")
"$BUILD/bin/make_corpus" "$WORK/seeds"
failed=0

for t in "${TARGETS[@]}"; do
  bin=$BUILD/bin/${t}_fuzzer
  dir=$WORK/$t
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$ROOT/fuzz/corpus/$t/"* "$WORK/seeds/$t/"* "$dir/corpus/" 2>/dev/null || true

  # Known findings first: each must run clean once fixed.
  regressions=()
  if [[ -d $ROOT/fuzz/regressions/$t ]]; then
    mapfile -t regressions < <(find "$ROOT/fuzz/regressions/$t" -type f ! -name '*.md' | sort)
  fi
  if [[ $REPLAY -eq 1 ]]; then
    echo "== $t: replaying the corpus and ${#regressions[@]} regression input(s)"
    # A failing input is written to the scratch directory, never the
    # repository (libFuzzer writes crash-* to the working directory otherwise).
    mkdir -p "$dir/artifacts"
    if ! "$bin" -runs=0 -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1; then
      echo "fuzz.sh: $t fails on its seed corpus; see $dir/log" >&2
      failed=1
    fi
    for r in "${regressions[@]}"; do
      if ! "$bin" -artifact_prefix="$dir/artifacts/" "$r" >>"$dir/log" 2>&1; then
        echo "fuzz.sh: $t still fails on $r" >&2
        failed=1
      fi
    done
    continue
  fi

  echo "== $t: fuzzing for ${TIME}s with $JOBS process(es); log $dir/log"
  flags=(-max_total_time="$TIME" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1
         -artifact_prefix="$dir/artifacts/")
  # Action sequences need room: up to 256 actions of a few bytes each.
  [[ $t == pipeline ]] && flags+=(-max_len=1024)
  # -fork shares one corpus between the processes and honours max_total_time overall.
  [[ $JOBS -gt 1 ]] && flags+=(-fork="$JOBS")
  rc=0
  nice "$bin" "${flags[@]}" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?

  crashes=$(find "$dir/artifacts" -type f | sort)
  execs=$(grep -h -o 'stat::number_of_executed_units: [0-9]*' "$dir/log" | awk '{s += $2} END {print s + 0}')
  last=$(grep -h -E '^#[0-9]+' "$dir/log" | tail -1 || true)
  if [[ -n $SUMMARY ]]; then
    # libFuzzer's last status line: cov (edges) and ft (features).
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
    printf '{"target": "%s", "seconds": %d, "executions": %d, "edges": %d, "features": %d, "corpus_files": %d, "corpus_bytes": %d, "findings": %d}\n' \
      "$t" "$TIME" "$execs" "${cov:-0}" "${ft:-0}" \
      "$(find "$dir/corpus" -type f | wc -l)" "$(du -sb "$dir/corpus" | cut -f1)" \
      "$([[ $rc -ne 0 || -n $crashes ]] && echo 1 || echo 0)" >>"$SUMMARY"
  fi
  if [[ $rc -ne 0 || -n $crashes ]]; then
    echo "fuzz.sh: $t FOUND A PROBLEM (exit $rc); log $dir/log" >&2
    for c in $crashes; do echo "  input: $c" >&2; done
    grep -m1 -A3 -E "invariant broken|ERROR: AddressSanitizer|runtime error|deadly signal" \
      "$dir/log" >&2 || true
    failed=1
    continue
  fi
  echo "   $t: $execs executions; $(ls "$dir/corpus" | wc -l) corpus files; last: $last"
done

if [[ $failed -ne 0 ]]; then
  echo "fuzz.sh: findings above; scratch kept in $WORK" >&2
  exit 1
fi
rm -rf "$WORK"
echo "fuzz.sh: no findings"
