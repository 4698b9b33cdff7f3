#!/usr/bin/env bash
# Smoke test of p4/serene.p4 on BMv2 (root): compiles the program, starts
# simple_switch on one end of a veth pair whose other end is in a network
# namespace (the workers' host, 10.77.0.2), configures one job over Thrift
# with simple_switch_CLI, and runs p4/smoke.py in the namespace: JOIN,
# READ, INC, CLOCK, NACK, RELEASE fan-out, exact reads, saturation, LEAVE.
# Everything it creates is removed on exit (the switch, the namespace, the
# veth pair).
#
#   sudo p4/smoke.sh            # P4=/opt/p4, THRIFT_PORT=9090
set -euo pipefail
P4=${P4:-/opt/p4}
THRIFT_PORT=${THRIFT_PORT:-9090}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/serene-p4-smoke.XXXXXX)
NS=serene-p4w
SW_IF=sp4s0   # simple_switch port 0
W_IF=sp4w0    # the workers' side, in $NS
SWITCH_IP=10.77.0.1
SWITCH_MAC=02:00:00:00:77:01
SS_PID=

cleanup() {
  if [[ -n $SS_PID ]]; then kill "$SS_PID" 2>/dev/null || true; wait "$SS_PID" 2>/dev/null || true; fi
  ip netns del "$NS" 2>/dev/null || true
  ip link del "$SW_IF" 2>/dev/null || true
}
trap cleanup EXIT

"$P4/bin/p4c-bm2-ss" --std p4-16 --target bmv2 --arch v1model -o "$WORK/serene.json" \
  "$HERE/serene.p4"

cleanup
ip netns add "$NS"
ip link add "$SW_IF" type veth peer name "$W_IF"
ip link set "$W_IF" netns "$NS"
sysctl -qw "net.ipv6.conf.$SW_IF.disable_ipv6=1" || true
ip link set "$SW_IF" up
ip -n "$NS" link set lo up
ip -n "$NS" addr add 10.77.0.2/24 dev "$W_IF"
ip -n "$NS" link set "$W_IF" up
# simple_switch answers no ARP: a static neighbour for the switch's address.
ip -n "$NS" neigh replace "$SWITCH_IP" lladdr "$SWITCH_MAC" dev "$W_IF" nud permanent

"$P4/bin/simple_switch" -i "0@$SW_IF" --thrift-port "$THRIFT_PORT" "$WORK/serene.json" \
  >"$WORK/simple_switch.log" 2>&1 &
SS_PID=$!
for _ in $(seq 50); do
  if echo | "$P4/bin/simple_switch_CLI" --thrift-port "$THRIFT_PORT" >/dev/null 2>&1; then break; fi
  sleep 0.2
done

# Job 7: key 0x5e7e7e01, 2 ranks, 100 elements in rows of 64 (2 rows, the last
# of 36), scale 2^24, incarnation 0x1234567, slot 0, rows and tags from 0.
# Bank 0 = SYNC (W = 0, k = all, L = 0; W and L are 0 in a fresh slot).
cat >"$WORK/commands" <<EOF
table_add SereneIngress.endpoint SereneIngress.set_endpoint $SWITCH_IP 7000 =>
table_add SereneIngress.jobs SereneIngress.set_job 7 => 0 0x5e7e7e01 2 2 100 64 36 24 0x1234567 0 0
register_write SereneIngress.bank_quorum 0 0xFFFFFFFF
mirroring_add 100 0
EOF
"$P4/bin/simple_switch_CLI" --thrift-port "$THRIFT_PORT" <"$WORK/commands" >"$WORK/cli.log"
if grep -qi "error\|invalid" "$WORK/cli.log"; then cat "$WORK/cli.log"; exit 1; fi

ip netns exec "$NS" python3 "$HERE/smoke.py"

# The counters the control plane will read: duplicates, seeding, lengths.
cat >"$WORK/counters" <<EOF
counter_read SereneIngress.job_drops 17
counter_read SereneIngress.job_drops 18
counter_read SereneIngress.job_drops 10
counter_read SereneIngress.global_drops 10
counter_read SereneIngress.global_drops 15
register_read SereneIngress.job_clamps 0
EOF
"$P4/bin/simple_switch_CLI" --thrift-port "$THRIFT_PORT" <"$WORK/counters" | grep -E "=|\[" || true
echo "smoke: done ($WORK)"
