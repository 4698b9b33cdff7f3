#!/usr/bin/env bash
# The wire-level conformance suite, run unchanged against either switch:
#
#   p4/conformance.sh BUILD_DIR software   # serene-switch's C++ pipeline on loopback
#   p4/conformance.sh BUILD_DIR bmv2       # p4/serene.p4 in simple_switch (root, /opt/p4)
#
# Both start the same static jobs through `serene-switch [--target bmv2]` and
# run, against it:
#   1. p4/smoke.py: 27 packet-level checks of one SYNC job of two ranks
#      (JOIN, READ, INC, CLOCK, NACK, RELEASE fan-out, exact reads,
#      saturation, LEAVE, eviction, rejoin);
#   1b. p4/golden.py: the same exchange as golden packets, byte for byte
#      (the C++ pipeline's tests replay the same file);
#   2. serene-ctl through the runtime API: jobs, telemetry, a policy change
#      (SSP(4) from clock 0) and the refusal of a second one, evictions,
#      creating and deleting a job (bmv2: refusing what P4 cannot hold);
#   3. serene-bench: 2 worker processes, 30 clocks under that SSP(4) (the
#      exact pulls checked), then 30 clocks of a SYNC job, every pull
#      checked against the exact sum.
# The bmv2 run puts the workers in a network namespace behind a veth pair
# whose other end is simple_switch's port 0. It exits 77 (ctest: skipped) with
# the reason when it is not root or the P4 toolchain is missing.
set -euo pipefail
BUILD=$(cd "${1:?usage: conformance.sh BUILD_DIR software|bmv2}" && pwd)
TARGET=${2:?usage: conformance.sh BUILD_DIR software|bmv2}
P4=${P4:-/opt/p4}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
BIN=$BUILD/bin
LOG=$(mktemp /tmp/serene-conformance.XXXXXX)
NS=serene-p4c$$
SW_IF=sp4s$$
W_IF=sp4w$$
SW_PID=
SMOKE_JOB=id=7,workers=2,elements=100,row=64,key=0x5e7e7e01
BENCH_JOB=id=8,workers=2,elements=1000,row=64,key=0x5e4e
SYNC_JOB=id=9,workers=2,elements=1000,row=64,key=0x5e4e
GOLDEN_JOB=id=10,workers=2,elements=100,row=64,key=0x5e7e7e01

cleanup() {
  if [[ -n $SW_PID ]]; then kill "$SW_PID" 2>/dev/null || true; wait "$SW_PID" 2>/dev/null || true; fi
  if [[ $TARGET == bmv2 ]]; then
    ip netns del "$NS" 2>/dev/null || true
    ip link del "$SW_IF" 2>/dev/null || true
  fi
}
trap cleanup EXIT
fail() { echo "conformance ($TARGET): FAIL: $*"; echo "--- switch log:"; cat "$LOG"; exit 1; }

case $TARGET in
  software)
    "$BIN/serene-switch" --bind 127.0.0.1 --port 0 --control 127.0.0.1:0 \
      --job "$SMOKE_JOB" --job "$BENCH_JOB" --job "$SYNC_JOB" --job "$GOLDEN_JOB" >"$LOG" 2>&1 &
    SW_PID=$!
    RUN=()
    BIND=127.0.0.1
    ;;
  bmv2)
    if [[ $(id -u) != 0 ]]; then
      echo "SKIPPED: the bmv2 conformance suite needs root (network namespace, veth, simple_switch)"
      exit 77
    fi
    if [[ ! -x $P4/bin/simple_switch || ! -x $P4/bin/p4c-bm2-ss ]]; then
      echo "SKIPPED: the P4 toolchain is not installed in $P4 (docs/p4.md \"The toolchain\")"
      exit 77
    fi
    ip netns add "$NS"
    ip link add "$SW_IF" type veth peer name "$W_IF"
    ip link set "$W_IF" netns "$NS"
    sysctl -qw "net.ipv6.conf.$SW_IF.disable_ipv6=1" || true
    ip link set "$SW_IF" up
    ip -n "$NS" link set lo up
    ip -n "$NS" addr add 10.77.0.2/24 dev "$W_IF"
    ip -n "$NS" link set "$W_IF" up
    ip -n "$NS" neigh replace 10.77.0.1 lladdr 02:53:45:00:00:01 dev "$W_IF" nud permanent
    # Trains of datagrams (GSO) would cross the veth unsegmented; BMv2 sees frames.
    ip netns exec "$NS" ethtool -K "$W_IF" tx off >/dev/null 2>&1 || true
    "$BIN/serene-switch" --target bmv2 --interface "$SW_IF" --address 10.77.0.1:7000 \
      --thrift-port $((9090 + $$ % 500)) --control 127.0.0.1:0 \
      --job "$SMOKE_JOB" --job "$BENCH_JOB" --job "$SYNC_JOB" --job "$GOLDEN_JOB" >"$LOG" 2>&1 &
    SW_PID=$!
    RUN=(ip netns exec "$NS")
    BIND=10.77.0.2
    ;;
  *) echo "conformance.sh: target must be software or bmv2, not '$TARGET'"; exit 2 ;;
esac

for _ in $(seq 600); do
  grep -q "listening on" "$LOG" && break
  kill -0 "$SW_PID" 2>/dev/null || fail "the switch exited at start"
  sleep 0.2
done
grep -q "listening on" "$LOG" || fail "the switch did not start within 120 s"
SWITCH=$(grep -o "listening on [0-9.]*:[0-9]*" "$LOG" | head -1 | awk '{print $3}')
CONTROL=$(grep -o "runtime API at [0-9.]*:[0-9]*" "$LOG" | head -1 | awk '{print $4}')
echo "conformance ($TARGET): switch at $SWITCH, runtime API at $CONTROL"

echo "--- 1. packet-level checks (p4/smoke.py)"
SMOKE_SWITCH=$SWITCH SMOKE_BIND=$BIND SMOKE_INCARNATION=any "${RUN[@]}" "$PY" "$HERE/smoke.py" \
  || fail "smoke.py"
echo "--- 1b. golden packets (p4/golden/smoke.golden, shared with the C++ data plane's tests)"
GOLDEN_SWITCH=$SWITCH GOLDEN_BIND=$BIND GOLDEN_JOB=10 "${RUN[@]}" "$PY" "$HERE/golden.py" \
  "$HERE/golden/smoke.golden" || fail "golden packets"

echo "--- 2. the runtime API (serene-ctl)"
CTL=("$BIN/serene-ctl" --control "$CONTROL")
"${CTL[@]}" jobs >"$LOG.ctl" || fail "serene-ctl jobs"
grep -q "^ *8  *2  *2  *1000  *64 " "$LOG.ctl" || { cat "$LOG.ctl"; fail "serene-ctl jobs: job 8 not listed"; }
"${CTL[@]}" telemetry 7 >"$LOG.ctl" || fail "serene-ctl telemetry 7"
grep -q "finished yes" "$LOG.ctl" || { cat "$LOG.ctl"; fail "telemetry: job 7 is not finished"; }
"${CTL[@]}" policy set 8 ssp:4 || fail "serene-ctl policy set 8 ssp:4"
"${CTL[@]}" policy get 8 >"$LOG.ctl" || fail "serene-ctl policy get 8"
grep -q "pending *ssp:4 from clock 0 (epoch 1)" "$LOG.ctl" || { cat "$LOG.ctl"; fail "job 8's change is not pending"; }
if "${CTL[@]}" policy set 8 ssp:2 2>"$LOG.ctl"; then fail "a second change before the first retired was accepted"; fi
grep -q "not retired" "$LOG.ctl" || { cat "$LOG.ctl"; fail "the refusal does not say why"; }
"${CTL[@]}" evict 7 0 || fail "serene-ctl evict 7 0"
if "${CTL[@]}" evict 7 9 2>/dev/null; then fail "evicting rank 9 of a 2-rank job was accepted"; fi
"${CTL[@]}" job create --id 11 --workers 2 --elements 300 --row 64 >/dev/null || fail "job create 11"
"${CTL[@]}" jobs | grep -q "^ *11  *2  *2  *300  *64 " || fail "job 11 not listed after create"
"${CTL[@]}" job delete 11 || fail "job delete 11"
if "${CTL[@]}" jobs | grep -q "^ *11 "; then fail "job 11 listed after delete"; fi
if [[ $TARGET == bmv2 ]]; then
  # What the P4 program cannot hold is refused with the reason (docs/p4.md).
  if "${CTL[@]}" job create --workers 2 --elements 300 --row 128 2>"$LOG.ctl"; then
    fail "a row of 128 values was accepted by the P4 switch"
  fi
  grep -q "wider than the P4 switch carries" "$LOG.ctl" || { cat "$LOG.ctl"; fail "row refusal"; }
  if "${CTL[@]}" job create --workers 17 --elements 300 --row 64 2>"$LOG.ctl"; then
    fail "17 ranks were accepted by the P4 switch"
  fi
  grep -q "at most 16 ranks" "$LOG.ctl" || { cat "$LOG.ctl"; fail "ranks refusal"; }
fi
rm -f "$LOG.ctl"

echo "--- 3. workers (serene-bench, every pull checked)"
"${RUN[@]}" "$BIN/serene-bench" --switch "$SWITCH" --job 8 --key 0x5e4e --workers 2 \
  --elements 1000 --row 64 --clocks 30 --policy ssp:4 || fail "serene-bench (job 8, SSP(4))"
"${RUN[@]}" "$BIN/serene-bench" --switch "$SWITCH" --job 9 --key 0x5e4e --workers 2 \
  --elements 1000 --row 64 --clocks 30 || fail "serene-bench (job 9, SYNC)"
echo "conformance ($TARGET): all passed"
