"""How long each part of scripts/reproduce.sh took (durations): record-time
and its table."""
import os
import subprocess
import time

from .common import ROOT, fail, machine, machines_line, read_records, replace_records


def record_time(args):
    """Records how long one part of scripts/reproduce.sh took (a quick run's
    parts apart from a full run's); it replaces the part's earlier record."""
    if args.part not in reproduce_parts(False):
        fail(f"--part {args.part}: not a part of scripts/reproduce.sh (its --parts lists them)")
    seconds = round(time.time() - args.started, 1)
    if seconds < 0:
        fail(f"--started {args.started} is in the future")
    scenario = ("quick:" if args.quick else "") + args.part
    replace_records("durations", scenario, [dict(machine(), figure="durations", scenario=scenario,
                                                 part=args.part, quick=args.quick,
                                                 seconds=seconds)])


def reproduce_parts(quick):
    """The parts of a run of scripts/reproduce.sh (--parts), in its order."""
    cmd = ["bash", os.path.join(ROOT, "scripts", "reproduce.sh"), "--parts"]
    out = subprocess.run(cmd + (["--quick"] if quick else []), capture_output=True, text=True,
                         check=True).stdout
    return out.split()


def fmt_duration(seconds):
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{seconds:.0f} s"
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def table_durations():
    """How long each part of a full run of scripts/reproduce.sh took, and the
    sum: what a full run and a quick one take."""
    latest = {r["scenario"]: r for r in read_records("durations")}  # one record per part
    lines = ["| part (`--only`) | time | measured at |", "|---|---:|---|"]
    summary, timed = [], []
    for quick in (False, True):
        parts = reproduce_parts(quick)
        have = [latest.get(("quick:" if quick else "") + p) for p in parts]
        if not quick:
            for p, r in zip(parts, have):
                lines.append(f"| {p} | {fmt_duration(r['seconds']) if r else 'not timed yet'} | "
                             f"{r['commit'] + ', ' + r['date'][:10] if r else '–'} |")
        total = sum(r["seconds"] for r in have if r)
        missing = [p for p, r in zip(parts, have) if not r]
        timed += [r for r in have if r]
        what = "A quick run (`--quick`)" if quick else "A full run"
        n = len(parts) - len(missing)
        if not n:
            summary.append(f"{what}: no part timed yet.")
        elif missing:
            summary.append(f"{what}: more than {fmt_duration(total)}, the sum of the {n} "
                           f"part{'s' if n > 1 else ''} timed so far (not timed yet: "
                           f"{', '.join(missing)}).")
        else:
            summary.append(f"{what}: {fmt_duration(total)}, the sum of its {n} parts.")
    lines += ["", " ".join(summary) +
              " Each part is timed by reproduce.sh when it runs (with or without `--only`); the "
              "parts may come from different runs and loads."]
    return lines + (["", machines_line(timed)] if timed else [])
