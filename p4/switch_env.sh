# Sourced by p4/conformance.sh and p4/train.sh: starts one Serene switch of
# either target with the given static jobs and tells the caller how to reach
# it. Needs BUILD (build directory) and TARGET (software | bmv2).
#
#   start_switch JOB_SPEC...   sets SWITCH (IP:PORT), CONTROL (runtime API),
#                              BIND (the workers' address), RUN (prefix that
#                              runs a command where the workers are), LOG
#   fail MESSAGE               prints it and the switch's log, exits 1
#   key_file KEY               a 0600 file holding KEY (for key_file= in a
#                              job spec); prints its path
#
# software: serene-switch on 127.0.0.1, ephemeral ports. bmv2: a veth pair
# whose one end carries simple_switch's port 0 (serene-switch puts a macvlan
# on it into simple_switch's own namespace) and whose other end, 10.77.0.2, is
# in a fresh network namespace where the workers run (the switch itself
# answers ARP for its 10.77.0.1); serene-switch --target bmv2 compiles p4/serene.p4
# (or loads P4_JSON, a compiled program).
# Without root or the toolchain (P4, default /opt/p4) the caller exits 77
# (ctest: skipped) with the reason. Everything is removed on exit.
P4=${P4:-/opt/p4}
P4_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
BIN=$BUILD/bin
LOG=$(mktemp /tmp/serene-p4.XXXXXX)
NS=serene-p4n$$
SW_IF=sp4s$$
W_IF=sp4w$$
SW_PID=

KEYS=$(mktemp -d /tmp/serene-p4-keys.XXXXXX)
# key_file KEY: a 0600 file holding KEY; prints its path. Job specs name
# their key's file (key_file=PATH), not the key: a command line is visible
# to every local user (docs/security.md).
key_file() { (umask 077 && echo "$1" >"$KEYS/$1") && echo "$KEYS/$1"; }

cleanup_switch() {
  rm -rf "$KEYS"
  if [[ -n $SW_PID ]]; then kill "$SW_PID" 2>/dev/null || true; wait "$SW_PID" 2>/dev/null || true; fi
  if [[ $TARGET == bmv2 ]]; then
    ip netns del "$NS" 2>/dev/null || true
    ip link del "$SW_IF" 2>/dev/null || true
  fi
}
trap cleanup_switch EXIT
fail() { echo "$(basename "$0") ($TARGET): FAIL: $*"; echo "--- switch log:"; cat "$LOG"; exit 1; }

start_switch() {
  local jobs=()
  for j in "$@"; do jobs+=(--job "$j"); done
  case $TARGET in
    software)
      "$BIN/serene-switch" --bind 127.0.0.1 --port 0 --control 127.0.0.1:0 "${jobs[@]}" \
        >"$LOG" 2>&1 &
      SW_PID=$!
      RUN=()
      BIND=127.0.0.1
      ;;
    bmv2)
      if [[ $(id -u) != 0 ]]; then
        echo "SKIPPED: the bmv2 target needs root (network namespace, veth, simple_switch)"
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
      # No static neighbour: the P4 switch answers ARP for 10.77.0.1.
      # A veth hands a train of datagrams (UDP GSO) to its peer unsegmented and
      # simple_switch would see one oversized frame: segment in the kernel.
      ip netns exec "$NS" ethtool -K "$W_IF" tx-udp-segmentation off >/dev/null
      local program=()
      if [[ -n ${P4_JSON:-} ]]; then program=(--p4-json "$P4_JSON"); fi
      "$BIN/serene-switch" --target bmv2 --interface "$SW_IF" --address 10.77.0.1:7000 \
        --thrift-port $((9090 + $$ % 500)) --control 127.0.0.1:0 "${program[@]}" "${jobs[@]}" \
        >"$LOG" 2>&1 &
      SW_PID=$!
      RUN=(ip netns exec "$NS")
      BIND=10.77.0.2
      ;;
    *) echo "$(basename "$0"): target must be software or bmv2, not '$TARGET'"; exit 2 ;;
  esac
  for _ in $(seq 900); do
    grep -q "listening on" "$LOG" && break
    kill -0 "$SW_PID" 2>/dev/null || fail "the switch exited at start"
    sleep 0.2
  done
  grep -q "listening on" "$LOG" || fail "the switch did not start within 180 s"
  SWITCH=$(grep -o "listening on [0-9.]*:[0-9]*" "$LOG" | head -1 | awk '{print $3}')
  CONTROL=$(grep -o "runtime API at [0-9.]*:[0-9]*" "$LOG" | head -1 | awk '{print $4}')
  echo "$(basename "$0") ($TARGET): switch at $SWITCH, runtime API at $CONTROL"
}
