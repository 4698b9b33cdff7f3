"""The checks of the P4 program in BMv2 (p4): record-p4 and docs/p4.md's
"Verified" table."""
import json
import os
import re
import subprocess
import time

from .common import (by_scenario, fail, fmt_range, machine, machines_line, no_records, read_records,
                     replace_records)


P4_CHECKS = ("compile", "conformance", "training", "rate")


def p4_toolchain():
    """The versions of the P4 toolchain the checks ran with (P4, default /opt/p4)."""
    prefix = os.environ.get("P4", "/opt/p4")
    def version(binary):
        try:
            # p4c prints its version on stderr.
            out = subprocess.run([os.path.join(prefix, "bin", binary), "--version"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return ""
        m = re.search(r"(\d+\.\d+\.\d+(?:\.\d+)?)", out)
        return m.group(1) if m else out.strip()
    return {"p4c": version("p4c-bm2-ss"), "bmv2": version("simple_switch")}


def record_p4(args):
    """Records one check of the P4 program in BMv2 (reproduce.sh's p4
    figure) from the check's output: compile (p4/compile_check.sh),
    conformance (p4/conformance.sh BUILD bmv2), training (p4/train.sh BUILD
    compare STEPS) or rate (p4/bench.sh's JSON lines, one per run). The check
    replaces its earlier records."""
    try:
        with open(args.out) as f:
            text = f.read()
    except OSError as e:
        fail(f"{args.out}: {e}")
    base = dict(machine(), **p4_toolchain(), figure="p4", scenario=args.check, source=args.check)
    if args.started is not None:
        base["seconds"] = round(time.time() - args.started, 1)
    records = []
    if args.check == "compile":
        widths = [int(w) for w in re.findall(r"SERENE_MAX_W=(\d+): compiled, no warnings", text)]
        if not widths:
            fail(f"{args.out}: no 'compiled, no warnings' line (p4/compile_check.sh's output)")
        records.append(dict(base, widths=widths))
    elif args.check == "conformance":
        if not re.search(r"^conformance \(bmv2\): all passed$", text, re.M):
            fail(f"{args.out}: no 'conformance (bmv2): all passed' (p4/conformance.sh BUILD bmv2)")
        sections = re.findall(r"^--- (.*)$", text, re.M)
        records.append(dict(base, sections=sections))
    elif args.check == "training":
        m = re.search(r"the same model, byte for byte \((\d+) bytes, sha256 ([0-9a-f]+)\), and the "
                      r"same accuracy through both switches after (\d+) steps", text)
        acc = re.search(r"^P4 switch \(BMv2\): accuracy ([0-9.]+)$", text, re.M)
        if not m or not acc:
            fail(f"{args.out}: no 'the same model, byte for byte' and accuracy lines "
                 "(p4/train.sh BUILD compare STEPS)")
        records.append(dict(base, model_bytes=int(m.group(1)), sha256=m.group(2),
                            steps=int(m.group(3)), accuracy=float(acc.group(1))))
    elif args.check == "rate":
        runs = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        records = [dict(base, run=i, clocks=j["clocks"], rows=j["rows"],
                        software_rps=j["software_rps"], bmv2_rps=j["bmv2_rps"])
                   for i, j in enumerate(runs, 1)]
        if not records:
            fail(f"{args.out}: no JSON lines (p4/bench.sh's last line)")
    replace_records("p4", args.check, records)


def table_p4():
    """The checks of docs/p4.md's "Verified", from their records."""
    by = by_scenario(read_records("p4"))
    if not by:
        return no_records("p4", "sudo scripts/reproduce.sh --only p4, with the P4 toolchain "
                          "installed")
    lines = ["| check | what ran | result | time (s) |", "|---|---|---|---:|"]
    # A check's records (the rate's runs) share its duration.
    secs = lambda rs: f"{max(r.get('seconds', 0) for r in rs):.0f}"
    if "compile" in by:
        r = by["compile"][0]
        lines.append(f"| compile | `p4/compile_check.sh`: p4c-bm2-ss at SERENE_MAX_W = "
                     f"{', '.join(map(str, r['widths']))} | compiles, no warning | {secs([r])} |")
    if "conformance" in by:
        r = by["conformance"][0]
        lines.append(f"| conformance | `p4/conformance.sh BUILD bmv2`: "
                     f"{'; '.join(s.rstrip('.') for s in r['sections'])} | all "
                     f"{len(r['sections'])} sections passed | {secs([r])} |")
    if "training" in by:
        r = by["training"][0]
        lines.append(f"| training | `p4/train.sh BUILD compare {r['steps']}`: 2 ranks, MLP, SYNC, "
                     f"seed 1, through the software switch and through BMv2 | the same final "
                     f"model byte for byte ({r['model_bytes']:,} bytes, sha256 {r['sha256']}…), "
                     f"accuracy {r['accuracy']:.4f} | {secs([r])} |")
    if "rate" in by:
        rs = by["rate"]
        ratio = [r["software_rps"] / r["bmv2_rps"] for r in rs]
        lines.append(f"| packet rate | `p4/bench.sh BUILD {rs[0]['clocks']}`, {len(rs)} runs: 2 "
                     f"ranks, {rs[0]['rows']} rows of 64, every pull checked | simple_switch "
                     f"{fmt_range([r['bmv2_rps'] for r in rs], lambda x: f'{x:,.0f}')} "
                     f"requests/s (window 8), serene-switch "
                     f"{fmt_range([r['software_rps'] for r in rs], lambda x: f'{x:,.0f}')} "
                     f"(window 128): {fmt_range(ratio, lambda x: f'{x:.0f}')} × | {secs(rs)} |")
    records = [r for rs in by.values() for r in rs]
    tools = sorted({(r.get("p4c", ""), r.get("bmv2", "")) for r in records})
    return lines + ["", "Median (min–max) over runs. Toolchain: " +
                    "; ".join(f"p4c {p} and BMv2 {b}" for p, b in tools) +
                    " (scripts/p4-toolchain.sh). " + machines_line(records)]
