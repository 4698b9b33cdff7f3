"""Serene against Gloo (comm): record-comm and its table."""
import json
import os
import statistics

from .common import (ROOT, fail, fmt_range, group_by, machine, machines_line, no_records,
                     read_records, write_records)


# Serene against Gloo (serene-bench comm, scripts/comm_sweep.sh): the issue-9
# target, Serene's time per iteration at most 0.8 of Gloo's best allreduce,
# holds at N = 4; a point is "met" only when the median over at least
# COMM_MIN_RUNS runs of one sweep meets it.
COMM_TARGET = 0.8
COMM_TARGET_WORKERS = 4
COMM_MIN_RUNS = 5
# Gloo's bcube reads past its buffers (serene-bench comm refuses it; runs
# from before the refusal have its times): it never counts as Gloo's best.
COMM_GLOO_EXCLUDED = ("bcube",)


def comm_point(r):
    return (r["workers"], r["elements"], r["row"])


def record_comm(args):
    """Records a comm_sweep.sh output (OUT.jsonl: one serene-bench comm JSON
    line per run and point, with "run"). The points it measured replace
    their earlier records, so every point's runs come from one sweep; points
    it did not measure (a --quick sweep's big models) keep theirs."""
    if not os.path.exists(args.out):
        fail(f"no {args.out} (scripts/comm_sweep.sh writes OUT.jsonl)")
    m = machine()
    sweep = f"{m['date']} {m['commit']}"
    records = []
    with open(args.out) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                j = json.loads(line)
                each = {k: v for k, v in j["gloo_each_ms"].items() if k not in COMM_GLOO_EXCLUDED}
                best = min(each, key=each.get)
                r = dict(m, figure="comm", scenario="comm", sweep=sweep,
                         source="serene-bench comm")
                r.update({
                    "run": j.get("run"),
                    "workers": j["workers"], "elements": j["elements"], "row": j["row"],
                    "serene_ms": j["serene_ms"],
                    "gloo_best_ms": each[best], "gloo_best_algorithm": best,
                    "gloo_default_ms": j["gloo_each_ms"].get("default"),
                    "gloo_each_ms": j["gloo_each_ms"],
                    "read_retransmits": j.get("read_retransmits"), "nacks": j.get("nacks"),
                    "clock_retransmits": j.get("clock_retransmits"),
                    "serene_cpu_ms": j.get("serene_cpu_ms"),
                    "serene_ranks_cpu_ms": j.get("serene_ranks_cpu_ms"),
                    "switch_cpu_ms": j.get("switch_cpu_ms"), "gloo_cpu_ms": j.get("gloo_cpu_ms"),
                    "switch_nice": j.get("switch_nice"), "switch_sched": j.get("switch_sched"),
                })
            except (ValueError, KeyError, TypeError) as e:
                fail(f"{args.out}:{n}: not a serene-bench comm record ({e})")
            records.append(r)
    if not records:
        fail(f"{args.out}: no records")
    measured = {comm_point(r) for r in records}
    kept = [r for r in read_records("comm") if comm_point(r) not in measured]
    path = write_records("comm", kept + records)
    print(f"evidence: {len(records)} records of {len(measured)} points in "
          f"{os.path.relpath(path, ROOT)} ({len(kept)} of other points kept)")


def table_comm():
    """Per point (workers, elements, row): Serene's time over Gloo's best
    allreduce within each run, median (min–max) over the runs; the absolute
    medians; the issue-9 target at N = 4."""
    records = read_records("comm")
    if not records:
        return no_records("comm", "scripts/reproduce.sh, or scripts/comm_sweep.sh --runs 5 and "
                          "evidence.py record-comm")
    points = group_by(records, comm_point)
    f2 = lambda x: f"{x:.2f}"
    lines = [
        "Per point, Serene's time per iteration over Gloo's best allreduce's in the same run: "
        f"median (min–max) over the runs of one sweep; times are medians (min–max). "
        f"\"met\": the median is at most {COMM_TARGET} at N = {COMM_TARGET_WORKERS} over at "
        f"least {COMM_MIN_RUNS} runs.", "",
        "| workers | elements | row | runs | Serene / Gloo best | Serene ms | Gloo best ms "
        "(algorithm) | Serene / Gloo default | ≤ 0.8 at N = 4 | READs re-sent / NACKs | "
        "CPU ms/iter: Serene (ranks + switch) / Gloo best |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (w, e, row), rs in sorted(points.items()):
        ratios = [r["serene_ms"] / r["gloo_best_ms"] for r in rs]
        med = statistics.median(ratios)
        if w != COMM_TARGET_WORKERS:
            verdict = "–"
        elif len(rs) < COMM_MIN_RUNS:
            verdict = f"not judged ({len(rs)} runs < {COMM_MIN_RUNS})"
        else:
            verdict = "**met**" if med <= COMM_TARGET else "not met"
        algos = sorted({r["gloo_best_algorithm"] for r in rs})
        default = [r["serene_ms"] / r["gloo_default_ms"] for r in rs if r.get("gloo_default_ms")]
        cpu = [r for r in rs if r.get("serene_cpu_ms") is not None]
        med_of = lambda key, rr: statistics.median(r[key] for r in rr)
        cpu_text = (f"{med_of('serene_cpu_ms', cpu):.2f} ({med_of('serene_ranks_cpu_ms', cpu):.2f}"
                    f" + {med_of('switch_cpu_ms', cpu):.2f}) / {med_of('gloo_cpu_ms', cpu):.2f}"
                    if cpu else "–")
        lines.append(
            f"| {w} | {e:,} | {row} | {len(rs)} | "
            f"**{f2(med)}**{f' ({f2(min(ratios))}–{f2(max(ratios))})' if len(rs) > 1 else ''} | "
            f"{fmt_range([r['serene_ms'] for r in rs], f2)} | "
            f"{fmt_range([r['gloo_best_ms'] for r in rs], f2)} ({', '.join(algos)}) | "
            f"{fmt_range(default, f2)} | {verdict} | "
            f"{sum(r.get('read_retransmits') or 0 for r in rs)} / "
            f"{sum(r.get('nacks') or 0 for r in rs)} | {cpu_text} |")
    return lines + ["", machines_line(records)]
