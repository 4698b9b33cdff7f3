#!/usr/bin/env python3
"""Smoke test of p4/serene.p4 on simple_switch: two ranks of one SYNC job,
over plain UDP sockets (no scapy). Run inside the workers' network namespace
by p4/smoke.sh, which sets up the switch and the job:

  job 7, key 0x5e7e7e01, N = 2, elements = 100, R = 64 (rows 2, last row 36),
  scale 2^24, incarnation 0x1234567, SYNC; the switch is 10.77.0.1:7000.

Every step prints what it sent and got; the first mismatch fails (exit 1).
"""
import socket
import struct
import sys

# SMOKE_SWITCH / SMOKE_BIND point the same checks at another switch, e.g. the
# software switch on loopback (serene-switch --bind 127.0.0.1 --port 7077
# --control off --job id=7,workers=2,elements=100,row=64,key=0x5e7e7e01):
# that is how the expectations below were checked against the reference.
import os

_host, _port = os.environ.get("SMOKE_SWITCH", "10.77.0.1:7000").rsplit(":", 1)
SWITCH = (_host, int(_port))
BIND = os.environ.get("SMOKE_BIND", "10.77.0.2")
# The P4 switch's incarnation is the control plane's (0x1234567 in smoke.sh);
# the software switch draws its own: SMOKE_INCARNATION=any skips the check.
INCARNATION = os.environ.get("SMOKE_INCARNATION", "0x1234567")
JOB, KEY = 7, 0x5E7E7E01
NONE = 0xFFFFFFFF
JOIN, JOIN_ACK, READ, READ_REPLY, INC, CLOCK, RELEASE, NACK, LEAVE, ERROR, COOKIE = range(1, 12)
F_SATURATED, F_EVICTED, F_FINISHED, F_WAITING, F_EXACT = 2, 4, 8, 16, 32
HDR = struct.Struct(">HBBHHIIIHH")


def pack(op, worker, clock=0, row=0, values=(), flags=0, key=KEY, job=JOB):
    h = HDR.pack(0x5345, 1, op, job, worker, key, clock & NONE, row, len(values), flags)
    return h + b"".join(struct.pack(">I", v & NONE) for v in values)


def unpack(data):
    magic, ver, op, job, worker, key, clock, row, count, flags = HDR.unpack_from(data)
    assert magic == 0x5345 and ver == 1, data[:24].hex()
    assert len(data) == 24 + 4 * count, f"length {len(data)} != 24 + 4*{count}"
    values = list(struct.unpack_from(f">{count}I", data, 24))
    return dict(op=op, job=job, worker=worker, key=key, clock=clock, row=row, flags=flags,
                values=values)


def sock(port):
    s = Sock(socket.AF_INET, socket.SOCK_DGRAM)
    NAMES[s] = "abc"[port - 5000]
    s.bind((BIND, port))
    s.settimeout(1.0)
    return s


checks = 0

# SMOKE_RECORD=FILE writes the exchange as golden packets (p4/golden/README.md):
# every datagram sent, every reply as expected (hex; '.' = any nibble, a
# trailing '*' = longer replies allowed), every silence. The C++ data plane's
# tests and p4/golden.py replay the file against either switch.
RECORD = open(os.environ["SMOKE_RECORD"], "w") if os.environ.get("SMOKE_RECORD") else None
NAMES = {}


class Sock(socket.socket):
    def sendto(self, data, addr, cookie=False):
        if RECORD:
            h = data.hex()
            if cookie:  # the JOIN echoes the last COOKIE's cookie (clock and row)
                h = h[:24] + "@cookie" + h[40:]
            RECORD.write(f"send {NAMES[self]} {h}\n")
        return super().sendto(data, addr)


def record_reply(s, what, data, want):
    if not RECORD:
        return
    h = data.hex()
    got = unpack(data)
    if got["op"] == JOIN_ACK:  # the incarnation is each switch's own draw
        h = h[:48 + 9 * 8] + "." * 8 + h[48 + 10 * 8:]
    if got["op"] == COOKIE or (got["op"] == ERROR and got["values"][1:2] == [JOIN]):
        h = h[:24] + "." * 16 + h[40:]  # the cookie (echoed by an ERROR): secret and time
    if "values_prefix" in want and got["op"] != JOIN_ACK:  # only the first values are the contract
        n = len(want["values_prefix"])
        h = h[:40] + "...." + h[44:48 + 8 * n] + "*"
    RECORD.write(f"# {what}\nexpect {NAMES[s]} {h}\n")


def expect(s, what, **want):
    global checks
    try:
        data, src = s.recvfrom(65536)
    except socket.timeout:
        print(f"FAIL {what}: no reply")
        sys.exit(1)
    got = unpack(data)
    assert src == SWITCH, f"{what}: reply from {src}"
    record_reply(s, what, data, want)
    for k, v in want.items():
        if k == "values_prefix":
            k, v = "values", v + got["values"][len(v):]  # a longer reply may follow
        if got[k] != v:
            print(f"FAIL {what}: {k} = {got[k]!r}, want {v!r}\n  got {got}")
            sys.exit(1)
    checks += 1
    print(f"ok   {what}: op {got['op']} clock {got['clock']:#x} row {got['row']} "
          f"flags {got['flags']:#x} values {got['values'][:10]}{' ...' if len(got['values']) > 10 else ''}")
    return got


def silence(s, what, wait=0.5):
    global checks
    s.settimeout(wait)
    try:
        data, _ = s.recvfrom(65536)
        print(f"FAIL {what}: unexpected reply {unpack(data)}")
        sys.exit(1)
    except socket.timeout:
        pass
    finally:
        s.settimeout(1.0)
    checks += 1
    if RECORD:
        RECORD.write(f"# {what}\nsilence {NAMES[s]}\n")
    print(f"ok   {what}: no reply")


def join(s, rank, what, **want):
    """JOIN as a worker does (docs/protocol.md, "Return routability"): from an
    address that is not the rank's live binding the switch answers with a
    COOKIE, which the second JOIN echoes in its clock and row."""
    s.sendto(pack(JOIN, rank), SWITCH)
    c = expect(s, what + ": COOKIE", op=COOKIE, worker=rank, key=KEY, flags=JOIN << 8, values=[])
    s.sendto(pack(JOIN, rank, clock=c["clock"], row=c["row"]), SWITCH, cookie=True)
    return expect(s, what, **want)


a, b, c = sock(5000), sock(5001), sock(5002)
row0 = list(range(1, 65))
row1 = [1000 + i for i in range(36)]

ack = join(a, 0, "JOIN rank 0", op=JOIN_ACK, worker=0, clock=NONE, key=KEY, flags=0,
           values_prefix=[2, 100, 64, NONE, NONE, NONE, 0, 2, 24])
if INCARNATION != "any" and ack["values"][9] != int(INCARNATION, 0):
    print(f"FAIL incarnation {ack['values'][9]:#x}, want {INCARNATION}")
    sys.exit(1)
join(b, 1, "JOIN rank 1", op=JOIN_ACK, worker=1, clock=NONE, flags=0)
join(c, 1, "JOIN rank 1 from another port", op=ERROR, values=[11, JOIN])
join(b, 5, "JOIN rank 5 of 2", op=ERROR, worker=5, values=[1, JOIN])
b.sendto(pack(JOIN, 1, key=KEY ^ 1), SWITCH)
silence(b, "JOIN with a wrong key")
a.sendto(pack(READ, 0, clock=0, row=0), SWITCH)
expect(a, "READ at clock 0 (current)", op=READ_REPLY, row=0, values=[0] * 64)

# Seeding: rank 0 INCs clock 0, rank 1 may not.
a.sendto(pack(INC, 0, clock=0, row=0, values=row0), SWITCH)
a.sendto(pack(INC, 0, clock=0, row=0, values=row0), SWITCH)  # duplicate
a.sendto(pack(INC, 0, clock=0, row=1, values=row1), SWITCH)
b.sendto(pack(INC, 1, clock=0, row=0, values=row0), SWITCH)  # inc_seed_not_rank0
a.sendto(pack(INC, 0, clock=0, row=1, values=row1[:10]), SWITCH)  # bad_row_length
silence(a, "INCs get no reply")
a.sendto(pack(CLOCK, 0, clock=0, row=2), SWITCH)
silence(a, "CLOCK(0) of rank 0 waits for rank 1")
a.sendto(pack(READ, 0, clock=1, row=0), SWITCH)
expect(a, "READ while waiting for RELEASE", op=ERROR, clock=1, values=[9, READ])
a.sendto(pack(CLOCK, 0, clock=0, row=2), SWITCH)
silence(a, "CLOCK(0) retransmitted while waiting")

# Rank 1 completes clock 0: both are released, rank 1 by its own CLOCK's
# packet, rank 0 by the fan-out (clone + recirculation).
b.sendto(pack(CLOCK, 1, clock=0, row=0), SWITCH)
expect(b, "CLOCK(0) of rank 1 -> RELEASE", op=RELEASE, worker=1, clock=0, values=[0, 0, 0])
expect(a, "fan-out RELEASE to rank 0", op=RELEASE, worker=0, clock=0, values=[0, 0, 0])
b.sendto(pack(CLOCK, 1, clock=0, row=0), SWITCH)
expect(b, "CLOCK(0) retransmitted after RELEASE", op=RELEASE, worker=1, clock=0, values=[0, 0, 0])

# Clock 1 under SYNC: exact reads, even after rank 1 INCs clock 1.
a.sendto(pack(READ, 0, clock=1, row=0), SWITCH)
expect(a, "READ(1, row 0) exact", op=READ_REPLY, row=0, flags=F_EXACT, values=row0)
a.sendto(pack(READ, 0, clock=1, row=1), SWITCH)
expect(a, "READ(1, row 1) exact, short row", op=READ_REPLY, row=1, flags=F_EXACT, values=row1)
b.sendto(pack(INC, 1, clock=1, row=0, values=[5] * 64), SWITCH)
a.sendto(pack(READ, 0, clock=1, row=0), SWITCH)
expect(a, "READ(1, row 0) after rank 1's INC(1): still exact", op=READ_REPLY, flags=F_EXACT,
       values=row0)
a.sendto(pack(READ, 0, clock=2, row=0), SWITCH)
expect(a, "READ at a future clock", op=ERROR, clock=2, row=0, values=[4, READ])
a.sendto(pack(READ, 0, clock=1, row=2), SWITCH)
expect(a, "READ row 2 of 2", op=ERROR, row=2, values=[2, READ])
a.sendto(pack(INC, 0, clock=1, row=0, values=[0x7FFFFFFF] + [1] * 63), SWITCH)
a.sendto(pack(CLOCK, 0, clock=1, row=1), SWITCH)
silence(a, "CLOCK(1) of rank 0 waits")
b.sendto(pack(CLOCK, 1, clock=1, row=2), SWITCH)
# The P4 switch sends [received] only; the software switch adds scan_end and
# the missing rows (protocol.md allows both).
expect(b, "CLOCK(1, 2 rows) with 1 row INC'd -> NACK [1, ...]", op=NACK, clock=1, row=2,
       values_prefix=[1])
b.sendto(pack(CLOCK, 1, clock=1, row=1), SWITCH)
expect(b, "CLOCK(1) of rank 1 -> RELEASE", op=RELEASE, clock=1, values=[0, 1, 1])
expect(a, "fan-out RELEASE(1) to rank 0", op=RELEASE, worker=0, clock=1, values=[0, 1, 1])

# Clock 2: the pending clock-1 INCs are folded, saturating lane 0.
want = [0x7FFFFFFF] + [v + 5 + 1 for v in row0[1:]]
a.sendto(pack(READ, 0, clock=2, row=0), SWITCH)
expect(a, "READ(2, row 0): folded, saturated", op=READ_REPLY, flags=F_EXACT | F_SATURATED,
       values=want)

# LEAVE with FINISHED from a live rank ends the job for everyone.
b.sendto(pack(LEAVE, 1, clock=2, flags=F_FINISHED), SWITCH)
expect(b, "LEAVE(FINISHED) of rank 1", op=LEAVE, worker=1, clock=2, flags=F_SATURATED | F_FINISHED)
b.sendto(pack(READ, 1, clock=2, row=0), SWITCH)
expect(b, "READ after LEAVE -> evicted", op=ERROR, flags=F_SATURATED | F_FINISHED | F_EVICTED,
       values=[7, READ])
a.sendto(pack(CLOCK, 0, clock=2, row=0), SWITCH)
expect(a, "CLOCK(2) of rank 0 in a finished job -> RELEASE", op=RELEASE, clock=2,
       flags=F_SATURATED | F_FINISHED)
join(c, 1, "JOIN rank 1 from a new port after it left", op=JOIN_ACK, worker=1, clock=2,
     flags=F_SATURATED | F_FINISHED)

# With no rank live, a rank that JOINs resumes at the highest clock any rank
# completed, not at its own: it never runs a clock others were released from.
a.sendto(pack(CLOCK, 0, clock=3, row=0), SWITCH)
expect(a, "CLOCK(3) of rank 0 in a finished job -> RELEASE", op=RELEASE, clock=3,
       flags=F_SATURATED | F_FINISHED)
a.sendto(pack(LEAVE, 0, clock=3), SWITCH)
expect(a, "LEAVE of rank 0", op=LEAVE, worker=0, clock=3, flags=F_SATURATED | F_FINISHED)
c.sendto(pack(LEAVE, 1, clock=2), SWITCH)
expect(c, "LEAVE of rank 1: no rank is live", op=LEAVE, worker=1, clock=2,
       flags=F_SATURATED | F_FINISHED)
join(b, 1, "JOIN rank 1 with no rank live: resumes at clock 3", op=JOIN_ACK, worker=1, clock=3,
     flags=F_SATURATED | F_FINISHED)
print(f"smoke: {checks} checks passed")
