"""The simulator against real runs (sim-validation): record-validation and
its tables."""
import glob
import json
import math
import os
import statistics

from .common import (fail, fmt_range, machine, machines_line, no_records, read_records,
                     replace_records)


# The simulator against real runs (scripts/sim_validation.sh): per seed and
# run, the real run's JCT and the same run's in serene-sim given the compute
# and evaluation time the real one measured. Issue 30's goal: JCT as % of
# SYNC within VALIDATION_BOUND points of the real runs' (median of the
# per-seed differences).
VALIDATION_BOUND = 3.0


def median_interval(xs, level=0.95):
    """A distribution-free interval for the median of xs: (x_(k), x_(n+1-k))
    with the largest k whose coverage, 1 - 2 P(Binomial(n, 1/2) < k), is at
    least `level`. None when n is too small for any (n < 6 at 95 %)."""
    xs = sorted(xs)
    n = len(xs)
    below = 0.0  # P(Binomial(n, 1/2) < k)
    best = None
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2 ** n
        if 1 - 2 * below < level:
            break
        best = (xs[k - 1], xs[n - k])
    return best


def record_validation(args):
    """OUT holds real-S/ (serene-experiment) and sim-S-I/ (serene-sim, run I
    of the real one) per seed S, calibration-S.txt, and switch-us.txt (the
    simulated switch's time per packet the twins were given, if any)."""
    m = machine()
    if args.commit:
        m["commit"] = args.commit
    switch_us = 0.0
    switch_path = os.path.join(args.out, "switch-us.txt")
    if os.path.exists(switch_path):
        with open(switch_path) as f:
            switch_us = float(f.read().strip())
        host = os.path.join(args.out, "host-sync", "results.json")
        with open(host) as f:
            run = json.load(f)["runs"][0]
        m["host_sync_clock_ms"] = round(1e3 * run["job_completion_s"] / run["iterations_rank0"], 3)
    m["switch_us"] = switch_us
    records = []
    for real_path in sorted(glob.glob(os.path.join(args.out, "real-*", "results.json"))):
        seed = int(os.path.basename(os.path.dirname(real_path)).split("-", 1)[1])
        with open(real_path) as f:
            real = json.load(f)
        for i, run in enumerate(real["runs"]):
            sim_path = os.path.join(args.out, f"sim-{seed}-{i}", "results.json")
            if not os.path.exists(sim_path):
                fail(f"no {sim_path}: the simulated twin of {run['label']}, seed {seed}")
            with open(sim_path) as f:
                sim = json.load(f)["runs"][0]
            ev = run["ranks"][run["evaluating_rank"]]
            records.append(dict(
                m, figure="sim-validation", scenario=args.scenario, seed=seed,
                source="serene-experiment + serene-sim", workers=real["scenario"]["workers"],
                label=run["label"], policy=run["policy"], ok=run["ok"] and sim["ok"],
                real_jct_s=run["job_completion_s"], sim_jct_s=sim["job_completion_s"],
                real_iterations=run["iterations_rank0"], sim_iterations=sim["iterations_rank0"],
                real_accuracy=run["final_accuracy"], sim_accuracy=sim["final_accuracy"],
                real_reached=run["stop_reason"] == "target_reached",
                sim_reached=sim["stop_reason"] == "target_reached",
                compute_ms=round(1e3 * run["compute_per_iteration_s"], 3),
                eval_ms=round(1e3 * ev["eval_s"] / max(1, len(run["timeline"])), 3),
                real_policy_changes=[c["rule"] for c in run.get("policy_changes") or []],
                sim_policy_changes=[c["rule"] for c in sim.get("policy_changes") or []]))
    if not records:
        fail(f"no real-*/results.json under {args.out} (a scripts/sim_validation.sh output)")
    replace_records("sim-validation", args.scenario, records)


def switch_text(records):
    """The simulated switch's time per packet, as the twins were given it."""
    us = {r.get("switch_us", 0.0) for r in records}
    if us == {0.0}:
        return " The simulated switch processes a packet when it arrives."
    clocks = sorted({r["host_sync_clock_ms"] for r in records if "host_sync_clock_ms" in r})
    return (" The simulated switch takes " + " / ".join(f"{u:.2f}" for u in sorted(us))
            + " µs per packet, one after another: what makes its straggler-free SYNC clock as "
            "long as this host's (" + " / ".join(f"{c:.2f}" for c in clocks) + " ms).")


def table_validation(scenario):
    def gen():
        records = [r for r in read_records("sim-validation") if r["scenario"] == scenario]
        if not records:
            return no_records("sim-validation", "scripts/sim_validation.sh on a quiet machine",
                              scenario)
        seeds = sorted({r["seed"] for r in records})
        runs = {(r["seed"], r["label"]): r for r in records}
        labels = list(dict.fromkeys(r["label"] for r in records))
        lines = [f"{records[0]['workers']} ranks, {len(seeds)} seeds "
                 f"({', '.join(str(s) for s in seeds)}); median (min–max) over seeds; the "
                 "difference is the simulated ratio minus the real one, seed by seed."
                 + switch_text(records), "",
                 "| run | real JCT % of SYNC | simulated | difference (pt) | real JCT (s) | "
                 "simulated (s) | iterations real / simulated | ms per iteration real / "
                 "simulated | compute ms/iter | evaluation ms |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        worst = 0.0
        intervals = []
        for label in labels:
            real_pct, sim_pct, diff = [], [], []
            for s in seeds:
                a, b = runs.get((s, "SYNC")), runs.get((s, label))
                if not (a and b and a["ok"] and b["ok"]):
                    continue
                rp = 100 * b["real_jct_s"] / a["real_jct_s"]
                sp = 100 * b["sim_jct_s"] / a["sim_jct_s"]
                real_pct.append(rp)
                sim_pct.append(sp)
                diff.append(sp - rp)
            rs = [runs[(s, label)] for s in seeds if (s, label) in runs]
            if diff:
                worst = max(worst, abs(statistics.median(diff)))
            interval = median_interval(diff) if label != "SYNC" else None
            if interval:
                intervals.append(f"{label} {interval[0]:+.1f} … {interval[1]:+.1f}")
            f1 = lambda x: f"{x:.1f}"
            per_iteration = lambda jct, its: [1e3 * r[jct] / r[its] for r in rs if r[its] > 0]
            lines.append("| {} | {} | {} | {} | {} | {} | {} / {} | {} / {} | {} | {} |".format(
                label, fmt_range(real_pct, f1), fmt_range(sim_pct, f1),
                fmt_range(diff, lambda x: f"{x:+.1f}"),
                fmt_range([r["real_jct_s"] for r in rs], lambda x: f"{x:.2f}"),
                fmt_range([r["sim_jct_s"] for r in rs], lambda x: f"{x:.2f}"),
                fmt_range([r["real_iterations"] for r in rs], lambda x: f"{x:.0f}"),
                fmt_range([r["sim_iterations"] for r in rs], lambda x: f"{x:.0f}"),
                fmt_range(per_iteration("real_jct_s", "real_iterations"), f1),
                fmt_range(per_iteration("sim_jct_s", "sim_iterations"), f1),
                fmt_range([r["compute_ms"] for r in rs], lambda x: f"{x:.2f}"),
                fmt_range([r["eval_ms"] for r in rs], lambda x: f"{x:.0f}")))
        lines.append("")
        lines.append(f"Largest median difference: {worst:.1f} pt. Within {VALIDATION_BOUND:.0f} "
                     f"points: {'met' if worst <= VALIDATION_BOUND else 'not met'} (median).")
        if intervals:
            lines.append("")
            lines.append("95 % interval of the median difference (order statistics, no "
                         "assumption on the distribution): " + "; ".join(intervals) + " pt.")
        lines.append("")
        lines.append(machines_line(records))
        return lines
    return gen
