#!/usr/bin/env python3
"""Replays golden packets (p4/golden/*.golden) against a running switch over
UDP: the same file the C++ data plane's tests replay through
dataplane::Pipeline (tests/dataplane/golden_packets_test.cc), so both
switches are held to the same bytes.

  GOLDEN_SWITCH=HOST:PORT GOLDEN_BIND=ADDR golden.py FILE...

The file's endpoints a, b, c are UDP ports 5000, 5001, 5002 on GOLDEN_BIND.
Lines: `send E HEX` (a datagram from E; `@cookie` in HEX stands for the 8
bytes of the cookie of the last COOKIE E received), `expect E HEX` (E's next
reply: '.' matches any nibble, a trailing '*' allows a longer reply),
`silence E` (no reply for E within 0.5 s), `# ...` comments. The job (job 7, see
README.md; or GOLDEN_JOB) must exist on the switch. Exit 1 at the first mismatch.
"""
import os
import socket
import sys

host, port = os.environ.get("GOLDEN_SWITCH", "10.77.0.1:7000").rsplit(":", 1)
SWITCH = (host, int(port))
BIND = os.environ.get("GOLDEN_BIND", "10.77.0.2")
# GOLDEN_JOB replays the exchange on another job id (same key): the header's
# job field is rewritten in every datagram and expectation.
JOB = os.environ.get("GOLDEN_JOB")


def rejob(hex_text):
    return hex_text[:8] + f"{int(JOB):04x}" + hex_text[12:] if JOB else hex_text


def matches(want, got):
    prefix = want.endswith("*")
    want = want.rstrip("*")
    if len(got) < len(want) or (not prefix and len(got) != len(want)):
        return False
    return all(w == "." or w == g for w, g in zip(want, got))


def replay(path):
    socks = {}
    for name, p in (("a", 5000), ("b", 5001), ("c", 5002)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((BIND, p))
        socks[name] = s
    what, n = "", 0
    cookie = {}  # endpoint -> the last COOKIE's cookie, hex
    try:
        for lineno, line in enumerate(open(path), 1):
            line = line.strip()
            if not line:
                continue
            if line.startswith("#"):
                what = line[1:].strip()
                continue
            kind, ep, *rest = line.split()
            rest = [rejob(r) for r in rest]
            s = socks[ep]
            where = f"{os.path.basename(path)}:{lineno} ({what})"
            if kind == "send":
                if "@cookie" in rest[0]:
                    if ep not in cookie:
                        sys.exit(f"FAIL {where}: {ep} echoes a cookie it never got")
                    rest[0] = rest[0].replace("@cookie", cookie[ep])
                s.sendto(bytes.fromhex(rest[0]), SWITCH)
            elif kind == "expect":
                s.settimeout(1.0)
                try:
                    data, src = s.recvfrom(65536)
                except socket.timeout:
                    sys.exit(f"FAIL {where}: no reply for {ep}")
                if src != SWITCH or not matches(rest[0], data.hex()):
                    sys.exit(f"FAIL {where}: {ep} got\n  {data.hex()}\nwant\n  {rest[0]}")
                if data[3] == 11:  # COOKIE: its cookie is in clock and row
                    cookie[ep] = data[12:20].hex()
                n += 1
            elif kind == "silence":
                s.settimeout(0.5)
                try:
                    data, _ = s.recvfrom(65536)
                    sys.exit(f"FAIL {where}: {ep} got an unexpected reply {data.hex()}")
                except socket.timeout:
                    n += 1
            else:
                sys.exit(f"{path}:{lineno}: unknown line kind '{kind}'")
    finally:
        for s in socks.values():
            s.close()
    print(f"golden: {os.path.basename(path)}: {n} replies matched")


for f in sys.argv[1:]:
    replay(f)
