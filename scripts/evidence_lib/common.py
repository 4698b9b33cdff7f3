"""What every figure shares: where the records are, what a record says of the
machine it was measured on, reading and replacing a figure's records, and
the helpers of every table (a median with its range, the machines line)."""
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The records. Only this module reads DATA (tests/docs/scratch_data.py points
# it at a scratch directory): elsewhere go through read_records and
# write_records.
DATA = os.path.join(ROOT, "docs", "data")
DOCS = os.path.join(ROOT, "docs")


# Two-sided 95 % quantiles of Student's t by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
       10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 30: 2.04}


def fail(msg):
    print(f"evidence.py: {msg}", file=sys.stderr)
    sys.exit(2)


def t95(df):
    keys = [k for k in sorted(T95) if k <= df]
    if not keys:
        raise ValueError("a confidence interval needs at least two samples")
    return T95[keys[-1]]


def machine():
    """The commit, CPU, cores, kernel and date a record was measured on."""
    def git(*args):
        try:
            return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    commit = git("rev-parse", "--short=12", "HEAD")
    # docs/ is what the records and their tables go to (a sweep writes its
    # first records before its later runs): only a change elsewhere is one
    # to the code that ran.
    if git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs"):
        commit += "+dirty"
    return {"commit": commit, "cpu": cpu, "cores": os.cpu_count(),
            "kernel": platform.release(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")}


def no_records(figure, how, of=None):
    """What a generated table says when its records are missing: how to make them."""
    return [f"(no records{f' of {of}' if of else ''} in docs/data/{figure}.jsonl: run {how})"]


def read_records(figure):
    path = os.path.join(DATA, f"{figure}.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_records(figure, records):
    """Writes docs/data/FIGURE.jsonl anew with `records`; returns its path."""
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, f"{figure}.jsonl")
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    return path


def replace_records(figure, scenario, records):
    """Replaces the figure's records of `scenario` (one sweep) by `records`."""
    kept = [r for r in read_records(figure) if r.get("scenario") != scenario]
    path = write_records(figure, kept + records)
    print(f"evidence: {len(records)} records of {scenario} in {os.path.relpath(path, ROOT)}")


def record_summary_lines(path, figure, scenario_of, writes):
    """Records a script's summary, a JSON line per target or mode, in
    docs/data/FIGURE.jsonl: each line replaces the earlier record of its
    scenario (`scenario_of(line)`). `writes` says what makes the file."""
    if not os.path.exists(path):
        fail(f"no {path} ({writes} writes it)")
    m = machine()
    with open(path) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    if not runs:
        fail(f"nothing in {path} (it comes from {writes})")
    for run in runs:
        scenario = scenario_of(run)
        replace_records(figure, scenario, [dict(m, figure=figure, scenario=scenario, **run)])


def fmt_range(xs, f):
    xs = sorted(x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x)))
    if not xs:
        return "–"
    med = statistics.median(xs)
    if len(xs) == 1:
        return f(med)
    return f"{f(med)} ({f(xs[0])}–{f(xs[-1])})"


def group_by(records, key):
    """Records grouped by key(record), or by record[key] when key is a field name; groups keep
    the records' order and appear in the order of their first record."""
    get = key if callable(key) else (lambda r: r[key])
    out = {}
    for r in records:
        out.setdefault(get(r), []).append(r)
    return out


def by_scenario(records):
    return group_by(records, "scenario")


def machines_line(records):
    ms = sorted({(r["cpu"], r["cores"], r["kernel"]) for r in records})
    commits = sorted({r["commit"] for r in records})
    dates = sorted({r["date"][:10] for r in records})
    where = "; ".join(f"{cpu}, {cores} cores, Linux {kernel}" for cpu, cores, kernel in ms)
    return (f"Measured on {where}; commit {', '.join(commits)}; "
            f"{dates[0] if len(dates) == 1 else dates[0] + ' to ' + dates[-1]}.")
