#!/usr/bin/env bash
# Builds the P4 reference toolchain that p4/ and `serene-switch --target bmv2` use (docs/p4.md):
# BMv2 (simple_switch, simple_switch_CLI) and p4c with only its BMv2 back end (p4c-bm2-ss), at
# pinned commits, into PREFIX (default /opt/p4). About 12 min for BMv2 and 32 min for p4c on 2 cores.
#
#   sudo scripts/p4-toolchain.sh                          # sources cloned from GitHub
#   sudo scripts/p4-toolchain.sh --snapshots /work/.mirror --prefix /opt/p4
#   scripts/p4-toolchain.sh --snapshots DIR --check       # only check DIR has every pinned commit
#
# Run with --help for the options. Nothing it fetches or builds goes into this repository.
set -euo pipefail

# ---- Pinned versions ------------------------------------------------------------------------
# BMv2 1.15.5 and p4c 1.2.5.16: the versions docs/p4.md's "Verified" runs used.
BMV2_REPO=p4lang/behavioral-model
BMV2_COMMIT=9674187f610c81878e3586f9a1746dcc7f903114
P4C_REPO=p4lang/p4c
P4C_COMMIT=34b86e9bacb932c799aaf1b83495ce1e386ea047
# What that p4c commit pins (cmake/Abseil.cmake, cmake/Protobuf.cmake, CMakeLists.txt's
# FetchContent of p4runtime); the build points FetchContent at these sources, offline. The tags'
# commits are pinned too, so a moved tag is noticed.
ABSEIL_REPO=abseil/abseil-cpp
ABSEIL_TAG=20240722.1
ABSEIL_COMMIT=dd4c89bd657f1e247ce5111a5c89ffe6ccfd0c92
PROTOBUF_REPO=protocolbuffers/protobuf
PROTOBUF_TAG=v25.3
PROTOBUF_COMMIT=4a2aef570deb2bfb8927426558701e8bfc26f2a4
P4RUNTIME_REPO=p4lang/p4runtime
P4RUNTIME_COMMIT=ec4eb5ef70dbcbcbf2f8357a4b2b8c2f218845a5
# ----------------------------------------------------------------------------------------------

usage() {
  cat <<EOF
Usage: scripts/p4-toolchain.sh [--snapshots DIR] [--prefix DIR] [--work DIR] [--check]

Builds BMv2 ($BMV2_REPO@${BMV2_COMMIT:0:12}) and p4c's BMv2 back end
($P4C_REPO@${P4C_COMMIT:0:12}, with abseil $ABSEIL_TAG, protobuf $PROTOBUF_TAG and
p4runtime@${P4RUNTIME_COMMIT:0:12}) and installs simple_switch, simple_switch_CLI,
p4c-bm2-ss and the P4 include files into PREFIX.

  --snapshots DIR  take the sources from local git snapshots instead of GitHub: one git
                   directory per project at DIR/owner+name/repo (or repo/.git), e.g.
                   DIR/p4lang+p4c/repo; each must contain its pinned commit
  --prefix DIR     where to install (default /opt/p4; p4/*.sh read P4=DIR)
  --work DIR       scratch directory for sources and build logs (default /tmp/p4src;
                   emptied first)
  --check          only resolve every pinned commit (from the snapshots, or by fetching from
                   GitHub into --work) and exit: no packages, no build, no root needed
  -h, --help       this text

Without --check it needs root: it installs Debian's build dependencies (apt-get), writes PREFIX
and points Debian's python3 at BMv2's Thrift modules. Build logs go to WORK/*.log.
EOF
}

die() {
  echo "p4-toolchain: $*" >&2
  exit 1
}

SNAPSHOTS=""
PREFIX=/opt/p4
WORK=/tmp/p4src
CHECK_ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --snapshots | --prefix | --work)
      [[ $# -ge 2 && -n "$2" ]] || { echo "p4-toolchain: $1 needs a directory" >&2; usage >&2; exit 2; }
      case "$1" in
        --snapshots) SNAPSHOTS=$2 ;;
        --prefix) PREFIX=$2 ;;
        --work) WORK=$2 ;;
      esac
      shift 2 ;;
    --check) CHECK_ONLY=1; shift ;;
    *) echo "p4-toolchain: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ "$PREFIX" = /* ]] || die "--prefix '$PREFIX' must be an absolute path"
[[ "$WORK" = /* ]] || die "--work '$WORK' must be an absolute path"
if [[ -n "$SNAPSHOTS" && ! -d "$SNAPSHOTS" ]]; then
  die "--snapshots '$SNAPSHOTS' is not a directory"
fi
if [[ $CHECK_ONLY -eq 0 && $(id -u) -ne 0 ]]; then
  die "building needs root (apt-get, $PREFIX, python3's .pth): run it with sudo, or --check alone"
fi
command -v git >/dev/null || die "git is not installed (apt-get install git)"

# The git directory holding REPO (owner/name) at COMMIT: the snapshot's, or a shallow fetch of
# that one commit from GitHub into WORK/git/owner+name.
git_dir_for() {
  local repo=$1 commit=$2 name=${1/\//+} dir
  if [[ -n "$SNAPSHOTS" ]]; then
    dir="$SNAPSHOTS/$name/repo"
    [[ -d "$dir/.git" ]] && dir="$dir/.git"
    git --git-dir="$dir" rev-parse --git-dir >/dev/null 2>&1 ||
      die "no snapshot of $repo: expected a git directory at $SNAPSHOTS/$name/repo; fetch that" \
        "snapshot into $SNAPSHOTS, or run without --snapshots to clone from GitHub"
  else
    dir="$WORK/git/$name"
    if ! git --git-dir="$dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
      rm -rf "$dir"
      git init -q --bare "$dir"
      git --git-dir="$dir" fetch -q --depth 1 "https://github.com/$repo.git" "$commit" ||
        die "cannot fetch $repo@$commit from GitHub (no network? a proxy?); use --snapshots DIR"
    fi
  fi
  git --git-dir="$dir" cat-file -e "$commit^{commit}" 2>/dev/null ||
    die "$dir lacks the pinned commit $commit of $repo (its HEAD is" \
      "$(git --git-dir="$dir" rev-parse --short HEAD 2>/dev/null || echo unknown)); refresh the" \
      "snapshot, or run without --snapshots to clone from GitHub"
  echo "$dir"
}

# A pinned tag, where the git directory has tags, must still name its pinned commit.
check_tag() {
  local dir=$1 repo=$2 tag=$3 commit=$4 at
  at=$(git --git-dir="$dir" rev-parse -q --verify "refs/tags/$tag^{commit}" 2>/dev/null) || return 0
  [[ "$at" = "$commit" ]] ||
    die "$repo's tag $tag is $at in $dir, not the pinned $commit: the tag moved; check p4c's pin"
}

mkdir -p "$WORK"
BMV2_GIT=$(git_dir_for "$BMV2_REPO" "$BMV2_COMMIT")
P4C_GIT=$(git_dir_for "$P4C_REPO" "$P4C_COMMIT")
ABSEIL_GIT=$(git_dir_for "$ABSEIL_REPO" "$ABSEIL_COMMIT")
PROTOBUF_GIT=$(git_dir_for "$PROTOBUF_REPO" "$PROTOBUF_COMMIT")
P4RUNTIME_GIT=$(git_dir_for "$P4RUNTIME_REPO" "$P4RUNTIME_COMMIT")
check_tag "$ABSEIL_GIT" "$ABSEIL_REPO" "$ABSEIL_TAG" "$ABSEIL_COMMIT"
check_tag "$PROTOBUF_GIT" "$PROTOBUF_REPO" "$PROTOBUF_TAG" "$PROTOBUF_COMMIT"

# The pins above must be the ones p4c's own build files name.
p4c_file() { git --git-dir="$P4C_GIT" show "$P4C_COMMIT:$1"; }
p4c_file cmake/Abseil.cmake | grep -q "P4C_ABSEIL_VERSION \"$ABSEIL_TAG\"" ||
  die "p4c@$P4C_COMMIT does not pin abseil $ABSEIL_TAG (cmake/Abseil.cmake): update ABSEIL_*"
p4c_file cmake/Protobuf.cmake | grep -q "P4C_PROTOBUF_VERSION ${PROTOBUF_TAG#v})" ||
  die "p4c@$P4C_COMMIT does not pin protobuf $PROTOBUF_TAG (cmake/Protobuf.cmake): update PROTOBUF_*"
p4c_file CMakeLists.txt | grep -q "GIT_TAG *$P4RUNTIME_COMMIT" ||
  die "p4c@$P4C_COMMIT does not pin p4runtime $P4RUNTIME_COMMIT (CMakeLists.txt): update P4RUNTIME_*"

echo "p4-toolchain: every pinned commit found${SNAPSHOTS:+ in $SNAPSHOTS}:"
printf '  %-26s %s\n' "$BMV2_REPO" "$BMV2_COMMIT" "$P4C_REPO" "$P4C_COMMIT" \
  "$ABSEIL_REPO" "$ABSEIL_COMMIT ($ABSEIL_TAG)" "$PROTOBUF_REPO" "$PROTOBUF_COMMIT ($PROTOBUF_TAG)" \
  "$P4RUNTIME_REPO" "$P4RUNTIME_COMMIT"
[[ $CHECK_ONLY -eq 1 ]] && exit 0

export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends build-essential cmake ninja-build pkg-config git \
  automake autoconf libtool bison flex libfl-dev libgmp-dev libpcap-dev libboost-dev \
  libboost-test-dev libboost-program-options-dev libboost-system-dev libboost-filesystem-dev \
  libboost-thread-dev libboost-iostreams-dev libboost-graph-dev libevent-dev libssl-dev libgc-dev \
  libthrift-dev thrift-compiler python3-thrift libnanomsg-dev libxxhash-dev libjsoncpp-dev \
  libspdlog-dev ethtool iproute2 >/dev/null

SRC="$WORK/src"
rm -rf "$SRC" && mkdir -p "$SRC"/{bmv2,p4c,abseil,protobuf,p4runtime}
git --git-dir="$BMV2_GIT" archive "$BMV2_COMMIT" | tar -x -C "$SRC/bmv2"
# p4c's docs/ and testdata/ are not needed (and large files may be missing from a snapshot).
git --git-dir="$P4C_GIT" archive "$P4C_COMMIT" -- . ':(exclude)docs' ':(exclude)testdata' |
  tar -x -C "$SRC/p4c"
git --git-dir="$P4C_GIT" archive "$P4C_COMMIT" -- testdata/extern_modules | tar -x -C "$SRC/p4c"
git --git-dir="$ABSEIL_GIT" archive "$ABSEIL_COMMIT" | tar -x -C "$SRC/abseil"
git --git-dir="$PROTOBUF_GIT" archive "$PROTOBUF_COMMIT" | tar -x -C "$SRC/protobuf"
git --git-dir="$P4RUNTIME_GIT" archive "$P4RUNTIME_COMMIT" | tar -x -C "$SRC/p4runtime"

echo "p4-toolchain: building BMv2 (log: $WORK/bmv2.log)"
# Debian's thrift 0.17 and nanomsg work; no PI (P4Runtime server), no debugger.
(cd "$SRC/bmv2" && ./autogen.sh && ./configure --prefix="$PREFIX" --disable-logging-macros \
  --disable-elogger CXXFLAGS=-O2 && make -j"$(nproc)" && make install) >"$WORK/bmv2.log" 2>&1 ||
  die "the BMv2 build failed; see $WORK/bmv2.log"
ldconfig
# The Thrift CLIs (simple_switch_CLI, ...) need Debian's python3 (python3-thrift) and BMv2's modules.
pyver=$(/usr/bin/python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
echo "$PREFIX/lib/python$pyver/site-packages" >/usr/lib/python3/dist-packages/p4-toolchain.pth
for cli in "$PREFIX"/bin/*_CLI; do sed -i '1s|.*|#!/usr/bin/python3|' "$cli"; done

echo "p4-toolchain: building p4c-bm2-ss (logs: $WORK/p4c-cmake.log, $WORK/p4c.log)"
# BMv2 back end only; FetchContent pointed at the local sources. g++ 12 (Debian 12) refuses two
# erase_if lambdas in ir/visitor.cpp that take the map's value by non-const reference: make it const.
sed -i 's/\[this\](flow_join_points_t::value_type &el)/[this](const flow_join_points_t::value_type \&el)/' \
  "$SRC/p4c/ir/visitor.cpp"
cmake -S "$SRC/p4c" -B "$SRC/p4c/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" -DENABLE_BMV2=ON -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF \
  -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF -DENABLE_P4FMT=OFF -DENABLE_P4TEST=OFF \
  -DENABLE_P4C_GRAPHS=OFF -DENABLE_GTESTS=OFF -DENABLE_TEST_TOOLS=OFF -DENABLE_DOCS=OFF \
  -DP4C_USE_PREINSTALLED_BDWGC=ON -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
  -DFETCHCONTENT_SOURCE_DIR_ABSEIL="$SRC/abseil" -DFETCHCONTENT_SOURCE_DIR_PROTOBUF="$SRC/protobuf" \
  -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$SRC/p4runtime" >"$WORK/p4c-cmake.log" 2>&1 ||
  die "configuring p4c failed; see $WORK/p4c-cmake.log"
ninja -C "$SRC/p4c/build" -j"$(nproc)" p4c-bm2-ss >"$WORK/p4c.log" 2>&1 ||
  die "the p4c build failed; see $WORK/p4c.log"
# The back end and the P4 include files (v1model.p4, core.p4).
install -D "$SRC/p4c/build/backends/bmv2/p4c-bm2-ss" "$PREFIX/bin/p4c-bm2-ss"
mkdir -p "$PREFIX/share/p4c" && cp -r "$SRC/p4c/p4include" "$PREFIX/share/p4c/"
# p4c prints its version on stderr, after its path.
echo "P4 toolchain in $PREFIX: p4c $("$PREFIX/bin/p4c-bm2-ss" --version 2>&1 | sed -n 's/^Version \([^ ]*\).*/\1/p'), BMv2" \
  "$("$PREFIX/bin/simple_switch" --version)"
