#!/usr/bin/env bash
# The wire-level conformance suite, run unchanged against either switch:
#
#   p4/conformance.sh BUILD_DIR software   # serene-switch's C++ pipeline on loopback
#   p4/conformance.sh BUILD_DIR bmv2       # p4/serene.p4 in simple_switch (root, /opt/p4)
#
# Both start the same static jobs through `serene-switch [--target bmv2]` and
# run, against it:
#   1. p4/smoke.py: 37 packet-level checks of one SYNC job of two ranks
#      (JOIN, READ, INC, CLOCK, NACK, RELEASE fan-out, exact reads,
#      saturation, LEAVE, eviction, rejoin);
#   1b. p4/golden.py: the same exchange as golden packets, byte for byte
#      (the C++ pipeline's tests replay the same file);
#   2. serene-ctl through the runtime API: jobs, telemetry, a policy change
#      (SSP(4) from clock 0) and the refusal of a second one, a policy
#      script's rule (policies/ssp.lua), evictions,
#      creating and deleting a job (bmv2: refusing what P4 cannot hold), the
#      eviction of a rank silent for longer than its job's evict_after;
#   3. serene-bench: 2 worker processes, 30 clocks under that SSP(4) (the
#      exact pulls checked), then 30 clocks of a SYNC job, every pull
#      checked against the exact sum;
#   4. (bmv2) the workers learned the switch's MAC by ARP (no static
#      neighbour); kill -9 of serene-switch: simple_switch dies with it.
# The bmv2 run puts the workers in a network namespace behind a veth pair
# whose other end is simple_switch's port 0. It exits 77 (ctest: skipped) with
# the reason when it is not root or the P4 toolchain is missing.
set -euo pipefail
BUILD=$(cd "${1:?usage: conformance.sh BUILD_DIR software|bmv2}" && pwd)
TARGET=${2:?usage: conformance.sh BUILD_DIR software|bmv2}
source "$(dirname "$0")/switch_env.sh"
SMOKE_JOB=id=7,workers=2,elements=100,row=64,key_file=$(key_file 0x5e7e7e01)
BENCH_JOB=id=8,workers=2,elements=1000,row=64,key_file=$(key_file 0x5e4e)
SYNC_JOB=id=9,workers=2,elements=1000,row=64,key_file=$(key_file 0x5e4e)
GOLDEN_JOB=id=10,workers=2,elements=100,row=64,key_file=$(key_file 0x5e7e7e01)
SILENT_JOB=id=12,workers=2,elements=100,row=64,key_file=$(key_file 0x5e4e),evict_after=1s
SCRIPT_JOB=id=13,workers=2,elements=100,row=64,key_file=$(key_file 0x5e4e)
start_switch "$SMOKE_JOB" "$BENCH_JOB" "$SYNC_JOB" "$GOLDEN_JOB" "$SILENT_JOB" "$SCRIPT_JOB"
HERE=$P4_DIR

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
# A rule is checked against the job's rank count (the target's JobConfig).
if "${CTL[@]}" policy set 8 quorum:3:inf 2>"$LOG.ctl"; then fail "a quorum of 3 in a 2-rank job was accepted"; fi
grep -q "the job has 2 ranks" "$LOG.ctl" || { cat "$LOG.ctl"; fail "the quorum's refusal does not say why"; }
"${CTL[@]}" policy set 8 ssp:4 || fail "serene-ctl policy set 8 ssp:4"
"${CTL[@]}" policy get 8 >"$LOG.ctl" || fail "serene-ctl policy get 8"
grep -q "pending *ssp:4 from clock 0 (epoch 1)" "$LOG.ctl" || { cat "$LOG.ctl"; fail "job 8's change is not pending"; }
# A policy script decides the rule, whichever switch runs the job.
"${CTL[@]}" policy set 13 "$HERE/../policies/ssp.lua" --param w=3 || fail "policy set 13 ssp.lua"
"${CTL[@]}" policy get 13 | grep -q "pending *ssp:3 from clock 0" || fail "ssp.lua's rule not pending"
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
# A rank that joins and falls silent is evicted after evict_after (1 s).
"${RUN[@]}" "$PY" - "$SWITCH" "$BIND" <<'PY' || fail "JOIN of job 12"
import socket, struct, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[2], 0))
s.settimeout(2)
join = struct.Struct(">HBBHHIIIHH")
s.sendto(join.pack(0x5345, 1, 1, 12, 0, 0x5e4e, 0, 0, 0, 0), (host, int(port)))
cookie = s.recv(2048)  # return routability (protocol.md): echo the COOKIE's cookie
assert cookie[3] == 11, "no COOKIE"
clock, row = join.unpack_from(cookie)[6:8]
s.sendto(join.pack(0x5345, 1, 1, 12, 0, 0x5e4e, clock, row, 0, 0), (host, int(port)))
assert s.recv(2048)[3] == 2, "no JOIN_ACK"
PY
"${CTL[@]}" telemetry 12 | grep -q "^ *0  yes" || fail "rank 0 of job 12 not live after its JOIN"
sleep 2.5
"${CTL[@]}" telemetry 12 >"$LOG.ctl"
grep -q "^ *0  no" "$LOG.ctl" || { cat "$LOG.ctl"; fail "a silent rank was not evicted after 1 s"; }
grep -q "^ *1  yes" "$LOG.ctl" || { cat "$LOG.ctl"; fail "a rank that never joined was evicted"; }
rm -f "$LOG.ctl"

echo "--- 3. workers (serene-bench, every pull checked)"
"${RUN[@]}" env SERENE_KEY=0x5e4e "$BIN/serene-bench" --switch "$SWITCH" --job 8 --workers 2 \
  --elements 1000 --row 64 --clocks 30 --policy ssp:4 || fail "serene-bench (job 8, SSP(4))"
"${RUN[@]}" env SERENE_KEY=0x5e4e "$BIN/serene-bench" --switch "$SWITCH" --job 9 --workers 2 \
  --elements 1000 --row 64 --clocks 30 || fail "serene-bench (job 9, SYNC)"
if [[ $TARGET == bmv2 ]]; then
  echo "--- 4. ARP answered by the P4 switch"
  ip -n "$NS" neigh show 10.77.0.1 | grep -q "lladdr 02:53:45:00:00:01" \
    || fail "the workers did not learn the switch's MAC by ARP: $(ip -n "$NS" neigh show)"
  THRIFT=$(grep -o "Thrift port [0-9]*" "$LOG" | head -1 | awk '{print $3}')
  SS_PID=$(pgrep -f "simple_switch .*--thrift-port $THRIFT" | head -1)
  [[ -n $SS_PID ]] || fail "no simple_switch on Thrift port $THRIFT"
  echo "--- 5. simple_switch's Thrift port is reachable only in its own network namespace"
  # Connects to HOST:PORT; fails if refused, unreachable or silent for 3 s.
  tcp_answers() { timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
  # The port is the right one: it answers inside simple_switch's namespace.
  nsenter --net="/proc/$SS_PID/ns/net" bash -c "$(declare -f tcp_answers); tcp_answers 127.0.0.1 $THRIFT" \
    || fail "Thrift port $THRIFT does not answer in simple_switch's namespace"
  [[ $(readlink "/proc/$SS_PID/ns/net") != "$(readlink /proc/self/ns/net)" ]] \
    || fail "simple_switch runs in the host's network namespace"
  for host in 127.0.0.1 $(hostname -I 2>/dev/null); do
    if tcp_answers "$host" "$THRIFT"; then fail "Thrift port $THRIFT answers on $host from the host"; fi
  done
  if "${RUN[@]}" bash -c "$(declare -f tcp_answers); tcp_answers 10.77.0.1 $THRIFT"; then
    fail "Thrift port $THRIFT answers on the switch's address 10.77.0.1 from the workers' namespace"
  fi
  echo "--- 6. kill -9 of serene-switch takes simple_switch, its namespace and its ports with it"
  DAEMON=$SW_PID
  kill -9 "$SW_PID"
  wait "$SW_PID" 2>/dev/null || true
  SW_PID=
  for _ in $(seq 50); do
    pgrep -f "simple_switch .*--thrift-port $THRIFT" >/dev/null || break
    sleep 0.1
  done
  if pgrep -f "simple_switch .*--thrift-port $THRIFT" >/dev/null; then
    fail "simple_switch outlived serene-switch"
  fi
  # Its ports (srnk<pid>[scm]) went with its namespace; the user's interface stays.
  for _ in $(seq 50); do
    ls /sys/class/net | grep -q "^srnk$DAEMON[scm]\$" || break
    sleep 0.1
  done
  if ls /sys/class/net | grep "^srnk$DAEMON[scm]\$"; then fail "the killed switch's ports remain"; fi
  ip link show "$SW_IF" >/dev/null || fail "the workers' interface $SW_IF is gone"
fi
echo "conformance ($TARGET): all passed"
