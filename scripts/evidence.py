#!/usr/bin/python3
"""Raw results behind the docs' figures, and the tables made from them.

Every figure in docs/ that a run measures comes from records in docs/data/
(JSON lines, one record per run of a sweep, committed). Each record names the
commit, the CPU model, the cores, the kernel and the date it was measured on.
Tables in docs/*.md sit between markers

    <!-- generated: NAME -->
    ...
    <!-- /generated: NAME -->

and are made from the records by this script alone, so a table can always be
traced to its runs, and `tables --check` (a ctest test) fails when a table
differs from what its records give.

    evidence.py record-sim OUT --figure F --scenario S   # a serene-sim --seeds output -> docs/data/F.jsonl
    evidence.py record-experiment OUT --figure F --scenario S --seed N
    evidence.py record-comm OUT.jsonl                    # a scripts/comm_sweep.sh output -> docs/data/comm.jsonl
    evidence.py record-validation OUT/nN --scenario nN   # a scripts/sim_validation.sh output
    evidence.py record-time --part FIGURE:SCENARIO --started T [--quick]  # how long a part of reproduce.sh took
    evidence.py tables [--check]                         # rewrite (or check) every generated table
    evidence.py plots                                     # redraw the plots made from records (gnuplot)

A figure is the median of its seeds or runs with min and max; "met" means the
median meets the target.
"""
import argparse
import datetime
import glob
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "docs", "data")
DOCS = os.path.join(ROOT, "docs")

# Two-sided 95 % quantiles of Student's t by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
       10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 30: 2.04}

# The fixed policies an adaptive one is held to (issue 30: the best in hindsight).
FIXED = ["SYNC", "SSP(2)", "SSP(10)", "SSP(32)", "ASYNC"]


def fail(msg):
    print(f"evidence.py: {msg}", file=sys.stderr)
    sys.exit(2)


def t95(df):
    keys = [k for k in sorted(T95) if k <= df]
    if not keys:
        raise ValueError("a confidence interval needs at least two samples")
    return T95[keys[-1]]


# ------------------------------------------------------------------ records

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


def replace_records(figure, scenario, records, key=("scenario",)):
    """Replaces the figure's records of `scenario` (one sweep) by `records`."""
    os.makedirs(DATA, exist_ok=True)
    kept = [r for r in read_records(figure) if r.get("scenario") != scenario]
    path = os.path.join(DATA, f"{figure}.jsonl")
    with open(path, "w") as f:
        for r in kept + records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    print(f"evidence: {len(records)} records of {scenario} in {os.path.relpath(path, ROOT)}")


def run_record(run, extra):
    r = dict(extra)
    r.update({
        "label": run["label"],
        "policy": run["policy"],
        "params": run.get("params") or {},
        "ok": run["ok"],
        "jct_s": run.get("job_completion_s"),
        "reached": run.get("stop_reason") == "target_reached",
        "iterations": run.get("iterations_rank0"),
        "final_accuracy": run.get("final_accuracy"),
        "wait_total_s": run.get("wait_total_s"),
        "barrier_wait_total_s": run.get("barrier_wait_total_s"),
        "compute_per_iteration_s": run.get("compute_per_iteration_s"),
        "comm_per_iteration_s": run.get("comm_per_iteration_s"),
        "comm_share_pct": run.get("comm_share_pct"),
        "iterations_per_rank": [rank.get("iterations") for rank in run.get("ranks") or []],
        "policy_changes": [c["rule"] for c in run.get("policy_changes") or []],
        "policy_change_s": [round(max(c["seconds"], 0.0), 3)
                            for c in run.get("policy_changes") or []],
    })
    return r


def record_sim(args):
    """Records serene-sim --seeds outputs: one directory, or several whose
    seeds together make the sweep (reproduce.sh runs a sweep's seeds in one
    process per core)."""
    seeds = []
    for out in args.out:
        found = glob.glob(os.path.join(out, "seed-*", "results.json"))
        single = os.path.join(out, "results.json")
        if not found and os.path.exists(single):
            found = [single]
        if not found:
            fail(f"no results.json under {out} (a serene-sim --out directory)")
        seeds += found
    # In seed order, wherever each seed ran (OUT/seed-N/results.json).
    seed_of = re.compile(r"seed-(\d+)$")
    seeds.sort(key=lambda path: int(m.group(1)) if (m := seed_of.search(
        os.path.dirname(path))) else 0)
    m = machine()
    if args.commit:
        m["commit"] = args.commit
    wanted = set(args.label) if args.label else None
    records = []
    for path in seeds:
        with open(path) as f:
            j = json.load(f)
        seed = j["scenario"].get("seed")
        for run in j["runs"]:
            if wanted is None or run["label"] in wanted:
                records.append(run_record(run, dict(m, figure=args.figure, scenario=args.scenario,
                                                    seed=seed, source="serene-sim")))
    if wanted is not None and not records:
        fail(f"no run labelled {', '.join(args.label)} under {args.out}")
    if args.merge:
        # The runs of this output replace the same (seed, label) only: a
        # policy re-run beside fixed runs the simulator would repeat exactly.
        new = {(r["seed"], r["label"]) for r in records}
        records = [r for r in read_records(args.figure) if r.get("scenario") == args.scenario
                   and (r["seed"], r["label"]) not in new] + records
    replace_records(args.figure, args.scenario, records)


def record_experiment(args):
    path = os.path.join(args.out, "results.json")
    if not os.path.exists(path):
        fail(f"no {path} (a serene-experiment --out directory)")
    with open(path) as f:
        j = json.load(f)
    m = machine()
    if args.commit:
        m["commit"] = args.commit
    records = []
    for run in j["runs"]:
        r = run_record(run, dict(m, figure=args.figure, scenario=args.scenario, seed=args.seed,
                                 source="serene-experiment"))
        # Rank 0's test accuracy at each evaluation: the training curves.
        r["accuracy_curve"] = [[p["step"], p["accuracy"]] for p in run.get("timeline") or []
                               if p.get("accuracy") is not None]
        records.append(r)
    # One seed at a time: keep the other seeds of this sweep (--fresh starts one).
    others = [] if args.fresh else [
        r for r in read_records(args.figure)
        if r.get("scenario") == args.scenario and r.get("seed") != args.seed]
    replace_records(args.figure, args.scenario, others + records)


# The simulator against real runs (scripts/sim_validation.sh): per seed and
# run, the real run's JCT and the same run's in serene-sim given the compute
# and evaluation time the real one measured. Issue 30's goal: JCT as % of
# SYNC within VALIDATION_BOUND points of the real runs' (median of the
# per-seed differences).
VALIDATION_BOUND = 3.0


def record_validation(args):
    """OUT holds real-S/ (serene-experiment) and sim-S-I/ (serene-sim, run I
    of the real one) per seed S, and calibration-S.txt."""
    m = machine()
    if args.commit:
        m["commit"] = args.commit
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
                 "difference is the simulated ratio minus the real one, seed by seed.", "",
                 "| run | real JCT % of SYNC | simulated | difference (pt) | real JCT (s) | "
                 "simulated (s) | iterations real / simulated | compute ms/iter | "
                 "evaluation ms |",
                 "|---|---|---|---|---|---|---|---|---|"]
        worst = 0.0
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
            f1 = lambda x: f"{x:.1f}"
            lines.append("| {} | {} | {} | {} | {} | {} | {} / {} | {} | {} |".format(
                label, fmt_range(real_pct, f1), fmt_range(sim_pct, f1),
                fmt_range(diff, lambda x: f"{x:+.1f}"),
                fmt_range([r["real_jct_s"] for r in rs], lambda x: f"{x:.2f}"),
                fmt_range([r["sim_jct_s"] for r in rs], lambda x: f"{x:.2f}"),
                fmt_range([r["real_iterations"] for r in rs], lambda x: f"{x:.0f}"),
                fmt_range([r["sim_iterations"] for r in rs], lambda x: f"{x:.0f}"),
                fmt_range([r["compute_ms"] for r in rs], lambda x: f"{x:.2f}"),
                fmt_range([r["eval_ms"] for r in rs], lambda x: f"{x:.0f}")))
        lines.append("")
        lines.append(f"Largest median difference: {worst:.1f} pt. Within {VALIDATION_BOUND:.0f} "
                     f"points: {'met' if worst <= VALIDATION_BOUND else 'not met'} (median).")
        lines.append("")
        lines.append(machines_line(records))
        return lines
    return gen


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
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, "comm.jsonl")
    with open(path, "w") as f:
        for r in kept + records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    print(f"evidence: {len(records)} records of {len(measured)} points in "
          f"{os.path.relpath(path, ROOT)} ({len(kept)} of other points kept)")


# Google Benchmark outputs (--benchmark_out_format=json): one record per
# repetition of each benchmark; the binary is the scenario.
BENCH_META = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
              "repetitions", "repetition_index", "threads", "iterations", "time_unit",
              "aggregate_name", "aggregate_unit", "label", "error_occurred", "error_message"}


def record_bench(args):
    """Records a Google Benchmark JSON output (run with
    --benchmark_repetitions=N): every repetition of every benchmark, its
    times and counters. The binary's earlier records are replaced."""
    try:
        with open(args.out) as f:
            j = json.load(f)
        runs = [b for b in j["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    except (OSError, ValueError, KeyError) as e:
        fail(f"{args.out}: not a Google Benchmark JSON output ({e})")
    errors = [b["name"] for b in runs if b.get("error_occurred")]
    if errors:
        fail(f"{args.out}: benchmarks failed: {', '.join(errors)}")
    if not runs:
        fail(f"{args.out}: no benchmark runs")
    m = machine()
    binary = args.binary or os.path.basename(j["context"]["executable"])
    records = []
    for b in runs:
        r = dict(m, figure="micro", scenario=binary, source=binary,
                 benchmark=b["run_name"], repetition=b.get("repetition_index", 0),
                 iterations=b["iterations"], time_unit=b["time_unit"])
        r.update({k: v for k, v in b.items()
                  if k not in BENCH_META and isinstance(v, (int, float))})
        records.append(r)
    replace_records("micro", binary, records)


# The micro-benchmarks docs/performance.md shows: benchmark -> what it is.
# Times are CPU time per iteration (single-threaded loops), except the
# benchmarks named .../real_time, which are wall-clock time.
MICRO = {
    "dataplane_bench": [
        ("BM_IncRow/256", "INC of a row of 256 values (applied)"),
        ("BM_IncRow/4096", "INC, row of 4096"),
        ("BM_ReadRow/256", "READ of a row of 256 (into the Output)"),
        ("BM_ReadRow/4096", "READ, row of 4096"),
        ("BM_DropBadKey", "packet with a wrong key (dropped)"),
        ("BM_SyncClock/4", "SYNC round of 4 ranks (4 INC + 4 CLOCK)"),
        ("BM_SyncClock/64", "SYNC round of 64 ranks"),
        ("BM_SyncClock/256", "SYNC round of 256 ranks"),
        ("BM_SyncBarrierRound/256", "the barrier alone: SYNC round of 256 CLOCKs"),
        ("BM_SspStragglerClock/256", "SSP clock of 256 ranks with a straggler"),
        ("BM_SyncModelClock/elements:1000000/row:4096/burst:1",
         "a whole SYNC clock of 4 ranks, 1M values, rows of 4096, reply group"),
        ("BM_SyncModelClock/elements:8000000/row:4096/burst:1",
         "the same, 8M values (a 64 MB table: out of the caches)"),
        ("BM_SyncModelClock/elements:1000000/row:362/burst:1",
         "the same, 1M values, rows of 362 (MTU-sized), one Process per packet"),
        ("BM_SyncModelClock/elements:1000000/row:362/burst:44",
         "the same, served in bursts of 44 INCs (a GSO train)"),
        ("BM_SyncModelClock/elements:8000000/row:362/burst:44",
         "the same, 8M values, bursts of 44"),
    ],
    "conversion_bench": [
        ("BM_StoreValues/79510", "int32 → wire (StoreValues), 79,510 values"),
        ("BM_StoreValues/1000000", "int32 → wire, 1M values"),
        ("BM_LoadValues/79510", "wire → int32 (LoadValues), 79,510 values"),
        ("BM_LoadValues/1000000", "wire → int32, 1M values"),
        ("BM_Quantize/79510", "float → fixed point (Quantize), 79,510 values"),
        ("BM_Quantize/1000000", "float → fixed point, 1M values"),
        ("BM_Dequantize/79510", "fixed point → float (Dequantize), 79,510 values"),
        ("BM_Dequantize/1000000", "fixed point → float, 1M values"),
    ],
    "telemetry_bench": [
        ("BM_TelemetrySnapshot/workers:4/serialize:0",
         "Pipeline::Telemetry, 4 ranks (the part under the job's lock)"),
        ("BM_TelemetrySnapshot/workers:256/serialize:0", "Pipeline::Telemetry, 256 ranks"),
        ("BM_TelemetrySnapshot/workers:4/serialize:1",
         "snapshot + the API message + serialization, 4 ranks"),
        ("BM_TelemetrySnapshot/workers:256/serialize:1", "the same, 256 ranks"),
        ("BM_SyncRoundWithTelemetry/workers:4/period_us:0/real_time",
         "SYNC round of 4 ranks, no telemetry reader"),
        ("BM_SyncRoundWithTelemetry/workers:4/period_us:100000/real_time",
         "the same, a 10 Hz reader"),
        ("BM_SyncRoundWithTelemetry/workers:4/period_us:1000/real_time",
         "the same, a 1 kHz reader"),
        ("BM_SyncRoundWithTelemetry/workers:256/period_us:0/real_time",
         "SYNC round of 256 ranks, no reader"),
        ("BM_SyncRoundWithTelemetry/workers:256/period_us:100000/real_time",
         "the same, a 10 Hz reader"),
        ("BM_SyncRoundWithTelemetry/workers:256/period_us:1000/real_time",
         "the same, a 1 kHz reader"),
    ],
}
NS_PER = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def fmt_ns(ns):
    """A time in ns, in the unit that reads best, 3 significant digits."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def table_micro(binary):
    def make():
        records = [r for r in read_records("micro") if r["scenario"] == binary]
        if not records:
            return no_records("micro", "scripts/reproduce.sh --only micro", binary)
        by = {}
        for r in records:
            by.setdefault(r["benchmark"], []).append(r)
        reps = sorted({len(v) for v in by.values()})
        lines = [f"Time per iteration, median (min–max) over {'/'.join(map(str, reps))} "
                 "repetitions of one run; GB/s of values where the benchmark counts bytes.", "",
                 "| benchmark | what | time | GB/s |", "|---|---|---|---|"]
        for name, what in MICRO[binary]:
            rs = by.get(name)
            if not rs:
                lines.append(f"| `{name}` | {what} | not measured | |")
                continue
            key = "real_time" if name.endswith("/real_time") else "cpu_time"
            times = [r[key] * NS_PER[r["time_unit"]] for r in rs]
            gbs = [r["bytes_per_second"] / 1e9 for r in rs if r.get("bytes_per_second")]
            lines.append(f"| `{name}` | {what} | {fmt_range(times, fmt_ns)} | "
                         f"{fmt_range(gbs, lambda x: f'{x:.1f}') if gbs else ''} |")
        for name, bound_ns in MICRO_TARGETS.get(binary, []):
            rs = by.get(name)
            if rs:
                med = statistics.median(r["cpu_time"] * NS_PER[r["time_unit"]] for r in rs)
                lines += ["", f"`{name}` ≤ {fmt_ns(bound_ns)}: "
                          f"{'met' if med <= bound_ns else 'not met'} (median {fmt_ns(med)})."]
        return lines + ["", machines_line(records)]
    return make


# Targets some micro-benchmarks are held to (the barrier's: a SYNC round of
# 256 ranks, 256 INCs and CLOCKs, within 50 µs; 865e9b0).
MICRO_TARGETS = {"dataplane_bench": [("BM_SyncClock/256", 50e3)]}


def table_flood():
    """flood_bench's ratios, median (min–max) over the repetitions: the job's
    rounds per second with a keyless-JOIN flood beside it over without."""
    records = [r for r in read_records("micro") if r["scenario"] == "flood_bench"]
    if not records:
        return no_records("micro", "scripts/reproduce.sh --only micro", "flood_bench")
    f2 = lambda x: f"{x:.2f}"
    get = lambda key: [r[key] for r in records if key in r]
    med = statistics.median(get("ratio_quiet"))
    pinned = sum(1 for r in records if r.get("pinned"))
    return [f"{len(records)} repetitions of one run ({pinned} with both threads pinned to "
            "their CPUs); median (min–max).", "",
            "| `ratio_quiet` (flooded / quiet rounds per second) | `spin_quiet` (a spinning "
            "neighbour / quiet) | keyless JOINs dropped per second | within 10 % (≥ 0.9) |",
            "|---|---|---|---|",
            f"| {fmt_range(get('ratio_quiet'), f2)} | {fmt_range(get('spin_quiet'), f2)} | "
            f"{fmt_range(get('flood_pps'), lambda x: f'{x / 1e6:.1f} M')} | "
            f"{'met' if med >= 0.9 else 'not met'} (median) |",
            "", machines_line(records)]


def read_scale_sweep(path):
    """The runs of a scripts/scale_sweep.sh output (OUT.jsonl), with the keys
    a scale record keeps; fails on a file that is not one, or is empty."""
    try:
        with open(path) as f:
            rows = [{k: r[k] for k in SCALE_KEYS}
                    for r in (json.loads(line) for line in f if line.strip())]
    except (OSError, ValueError, KeyError) as e:
        fail(f"{path}: not a scripts/scale_sweep.sh OUT.jsonl ({e})")
    if not rows:
        fail(f"{path}: no records")
    return rows


def record_scale(args):
    """Records a scripts/scale_sweep.sh output (OUT.jsonl, one line per run
    of each point): the sweep replaces every earlier scale record."""
    m = machine()
    records = [dict(m, figure="scale", scenario="scale", source="scripts/scale_sweep.sh", **r)
               for r in read_scale_sweep(args.out)]
    replace_records("scale", "scale", records)


SCALE_KEYS = ["ranks", "run", "clocks", "elements", "clocks_per_s", "switch_cpu_ms_per_clock",
              "switch_cpu_us_per_rank_clock", "read_retransmits", "clock_retransmits", "wall_s"]


def table_scale():
    records = read_records("scale")
    if not records:
        return no_records("scale", "scripts/reproduce.sh --only scale")
    by = {}
    for r in records:
        by.setdefault(r["ranks"], []).append(r)
    runs = sorted({len(v) for v in by.values()})
    lines = [f"Median (min–max) over {'/'.join(map(str, runs))} runs of each point; re-sends "
             "summed over the runs.", "",
             "| ranks | clocks per run | clocks/s | switch CPU per clock of all ranks (ms) | "
             "per clock of one rank (µs) | READs re-sent | CLOCKs re-sent |",
             "|---|---|---|---|---|---|---|"]
    for n, rs in sorted(by.items()):
        lines.append(
            f"| {n} | {'/'.join(str(c) for c in sorted({r['clocks'] for r in rs}))} | "
            f"{fmt_range([r['clocks_per_s'] for r in rs], lambda x: f'{x:.1f}')} | "
            f"{fmt_range([r['switch_cpu_ms_per_clock'] for r in rs], lambda x: f'{x:.3f}')} | "
            f"{fmt_range([r['switch_cpu_us_per_rank_clock'] for r in rs], lambda x: f'{x:.1f}')} | "
            f"{sum(r['read_retransmits'] for r in rs)} | {sum(r['clock_retransmits'] for r in rs)} |")
    return lines + ["", machines_line(records)]


# The fault matrix (tests/faults/fault_matrix_test.cc): one Markdown row per
# case in the file SERENE_FAULT_MATRIX_REPORT names; one record per case.
FAULT_COLUMNS = ["policy", "fault", "dir", "seed", "clocks", "result", "wall_s", "retransmits",
                 "nacks", "duplicate_incs", "late_incs", "rx_injector", "tx_injector"]


def injector_counts(cell):
    """'offered/dropped/duplicated/reordered/delayed' -> five ints; '-' (no
    injector in that direction) -> None."""
    if cell == "-":
        return None
    counts = [int(x) for x in cell.split("/")]
    if len(counts) != 5:
        raise ValueError(f"injector cell '{cell}' has {len(counts)} counts, not 5")
    return counts


def record_faults(args):
    """Records a fault matrix run's rows (SERENE_FAULT_MATRIX_REPORT=FILE):
    the run replaces every earlier fault-matrix record."""
    m = machine()
    records = []
    try:
        with open(args.out) as f:
            lines = f.readlines()
    except OSError as e:
        fail(f"{args.out}: {e}")
    for n, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(FAULT_COLUMNS) or not cells[3].isdigit():
            continue  # a header, a separator or another line
        try:
            c = dict(zip(FAULT_COLUMNS, cells))
            r = dict(m, figure="faults", scenario="matrix", source="fault_matrix_test")
            r.update({"policy": c["policy"], "fault": c["fault"].strip("`"), "dir": c["dir"],
                      "seed": int(c["seed"]), "clocks": int(c["clocks"]),
                      "ok": c["result"] == "OK", "wall_s": float(c["wall_s"]),
                      "retransmits": int(c["retransmits"]), "nacks": int(c["nacks"]),
                      "duplicate_incs": int(c["duplicate_incs"]),
                      "late_incs": int(c["late_incs"]),
                      "rx_injector": injector_counts(c["rx_injector"]),
                      "tx_injector": injector_counts(c["tx_injector"])})
        except ValueError as e:
            fail(f"{args.out}:{n}: not a fault matrix row ({e})")
        records.append(r)
    if not records:
        fail(f"{args.out}: no fault matrix rows (run fault_matrix_test with "
             "SERENE_FAULT_MATRIX_REPORT=FILE)")
    replace_records("faults", "matrix", records)


def table_faults_summary():
    """Per policy and fault (directions and seeds summed): cases passed, wall
    time and the client's retransmissions per case (min–max), the switch's
    NACKs and ignored INCs, and what the injectors did."""
    records = read_records("faults")
    if not records:
        return no_records("faults", "scripts/reproduce.sh --only faults")
    groups = {}
    for r in records:
        groups.setdefault((r["policy"], r["fault"]), []).append(r)
    lines = [f"{len(records)} cases, {sum(r['ok'] for r in records)} passed, one run of the "
             f"matrix, the cases one after another ({sum(r['wall_s'] for r in records):.0f} s of "
             "serene-bench).", "",
             "| policy | fault | dirs | seeds | clocks | cases OK | wall s (min–max) | client "
             "retransmissions per case (min–max) | NACKs | duplicate INCs ignored | late INCs "
             "ignored | datagrams offered / dropped / duplicated / reordered / delayed (all "
             "cases) |",
             "|---|---|---|---|---:|---:|---|---|---:|---:|---:|---|"]
    for (policy, fault), rs in groups.items():
        totals = [0] * 5
        for r in rs:
            for inj in (r["rx_injector"], r["tx_injector"]):
                if inj:
                    totals = [a + b for a, b in zip(totals, inj)]
        wall = [r["wall_s"] for r in rs]
        retx = [r["retransmits"] for r in rs]
        lines.append(
            f"| {policy} | `{fault}` | {', '.join(dict.fromkeys(r['dir'] for r in rs))} | "
            f"{','.join(dict.fromkeys(str(r['seed']) for r in rs))} | "
            f"{','.join(dict.fromkeys(str(r['clocks']) for r in rs))} | "
            f"{sum(r['ok'] for r in rs)}/{len(rs)} | {min(wall):.2f}–{max(wall):.2f} | "
            f"{min(retx)}–{max(retx)} | {sum(r['nacks'] for r in rs)} | "
            f"{sum(r['duplicate_incs'] for r in rs)} | {sum(r['late_incs'] for r in rs)} | "
            f"{' / '.join(map(str, totals))} |")
    return lines + ["", machines_line(records)]


def table_faults_cases():
    records = read_records("faults")
    if not records:
        return no_records("faults", "scripts/reproduce.sh --only faults")
    inj = lambda x: "/".join(map(str, x)) if x else "-"
    lines = ["| policy | fault | dir | seed | clocks | result | wall s | retransmissions | "
             "NACKs | duplicate INCs | late INCs | rx injector: "
             "offered/dropped/duplicated/reordered/delayed | tx injector |",
             "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|"]
    for r in records:
        lines.append(
            f"| {r['policy']} | `{r['fault']}` | {r['dir']} | {r['seed']} | {r['clocks']} | "
            f"{'OK' if r['ok'] else 'FAILED'} | {r['wall_s']:.2f} | {r['retransmits']} | "
            f"{r['nacks']} | {r['duplicate_incs']} | {r['late_incs']} | "
            f"{inj(r['rx_injector'])} | {inj(r['tx_injector'])} |")
    return lines + ["", machines_line(records)]


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


# ------------------------------------------------------------------- tables

def fmt_range(xs, f):
    xs = sorted(x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x)))
    if not xs:
        return "–"
    med = statistics.median(xs)
    if len(xs) == 1:
        return f(med)
    return f"{f(med)} ({f(xs[0])}–{f(xs[-1])})"


def by_scenario(records):
    out = {}
    for r in records:
        out.setdefault(r["scenario"], []).append(r)
    return out


def machines_line(records):
    ms = sorted({(r["cpu"], r["cores"], r["kernel"]) for r in records})
    commits = sorted({r["commit"] for r in records})
    dates = sorted({r["date"][:10] for r in records})
    where = "; ".join(f"{cpu}, {cores} cores, Linux {kernel}" for cpu, cores, kernel in ms)
    return (f"Measured on {where}; commit {', '.join(commits)}; "
            f"{dates[0] if len(dates) == 1 else dates[0] + ' to ' + dates[-1]}.")


def pct_of_sync_by_label(records, key="jct_s"):
    """{label: [`key` (the JCT by default) as % of the same seed's SYNC run,
    one per seed that has both]}, labels in the order the records first name
    them."""
    seeds = sorted({r["seed"] for r in records})
    runs = {(r["seed"], r["label"]): r for r in records}
    out = {}
    for r in records:
        out.setdefault(r["label"], [])
    for label, pct in out.items():
        for s in seeds:
            a, b = runs.get((s, "SYNC")), runs.get((s, label))
            if a and b and a.get(key) and b.get(key) is not None:
                pct.append(100 * b[key] / a[key])
    return out


def has_accuracy(r):
    x = r.get("final_accuracy")
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def policy_table(records, waits=False, paper=None, per_rank=False):
    """Per run label: JCT as % of the same seed's SYNC run, median (min–max)
    over seeds; JCT; iterations; final accuracy; seeds that reached the target.
    `waits`: the time in pull and push and the barrier's part of it (summed
    over ranks) as % of SYNC's too. `paper`: {label: the reference paper's
    JCT % of SYNC} for a column beside ours. `per_rank`: each rank's
    iterations (median over seeds), for a straggler the others outrun.
    Timing-only records (no accuracy) leave out accuracy and target."""
    seeds = sorted({r["seed"] for r in records})
    runs = {(r["seed"], r["label"]): r for r in records}
    trains = any(has_accuracy(r) for r in records)
    head = ["run", "JCT % of SYNC"] + (["paper"] if paper else []) + ["JCT (s)"]
    if waits:
        head += ["waiting % of SYNC", "barrier wait % of SYNC"]
    head += ["iterations"] + (["iterations per rank"] if per_rank else [])
    head += ["final accuracy", "reached target"] if trains else []
    lines = [f"{len(seeds)} seeds ({', '.join(str(s) for s in seeds)}); median (min–max) over "
             "seeds." + ("" if trains else " Timing only: no gradients, a fixed step count."), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    waiting = pct_of_sync_by_label(records, "wait_total_s") if waits else {}
    barrier = pct_of_sync_by_label(records, "barrier_wait_total_s") if waits else {}
    f1 = lambda x: f"{x:.1f}"
    for label, pct in pct_of_sync_by_label(records).items():
        rs = [runs[(s, label)] for s in seeds if (s, label) in runs]
        cells = [label, fmt_range(pct, f1)]
        if paper:
            cells.append(f"{paper[label]:.1f}" if label in paper else "")
        cells.append(fmt_range([r["jct_s"] for r in rs], lambda x: f"{x:.2f}"))
        if waits:
            cells += [fmt_range(waiting[label], f1), fmt_range(barrier[label], f1)]
        cells.append(fmt_range([r["iterations"] for r in rs], lambda x: f"{x:.0f}"))
        if per_rank:
            per = [r.get("iterations_per_rank") or [] for r in rs]
            cells.append(", ".join(
                f"{statistics.median(p[i] for p in per if len(p) > i):.0f}"
                for i in range(max(map(len, per)))) or "–")
        if trains:
            cells += [fmt_range([r["final_accuracy"] for r in rs], lambda x: f"{x:.4f}"),
                      f"{sum(1 for r in rs if r['reached'])}/{len(rs)}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def adaptive_verdict(records, label="ADAPTIVE", bound=1.05):
    """ADAPTIVE against the fixed policy with the best mean JCT over the seeds
    (the best in hindsight), seed by seed."""
    seeds = sorted({r["seed"] for r in records})
    runs = {(r["seed"], r["label"]): r for r in records}
    fixed = [f for f in FIXED if all((s, f) in runs for s in seeds)]
    if not fixed or not all((s, label) in runs for s in seeds):
        return []
    best = min(fixed, key=lambda f: statistics.mean(runs[(s, f)]["jct_s"] for s in seeds))
    ratios = [runs[(s, label)]["jct_s"] / runs[(s, best)]["jct_s"] for s in seeds]
    acc = [runs[(s, label)]["final_accuracy"] - runs[(s, best)]["final_accuracy"] for s in seeds
           if has_accuracy(runs[(s, label)]) and has_accuracy(runs[(s, best)])]
    med = statistics.median(ratios)
    line = (f"{label} against the best fixed policy in hindsight, {best}: JCT ratio "
            f"{fmt_range(ratios, lambda x: f'{x:.3f}')}")
    if len(ratios) > 1:
        mean, sd = statistics.mean(ratios), statistics.stdev(ratios)
        h = t95(len(ratios) - 1) * sd / math.sqrt(len(ratios))
        line += f", mean {mean:.3f} (95 % CI {mean - h:.3f} … {mean + h:.3f})"
    if acc:
        line += f"; final accuracy {statistics.mean(acc) * 100:+.2f} pt"
    line += f". Target ≤ {bound:.2f}: {'met' if med <= bound else 'not met'} (median)."
    return [line]


# Issue 30's goals: no later than 1.05 x the best fixed policy where one
# fixed policy is right throughout; ahead of every fixed one by >= 10 % in
# the scenarios built so that none is (momentum: staleness costs; slowdown:
# it costs, and a rank degrades a third of the way; comego: it costs, and a
# rank is slow for a stretch only).
VERDICT_BOUND = {"momentum": 0.90, "slowdown": 0.90, "slowdown-floor": 0.90, "comego": 0.90}


# The reference paper's JCT as % of SYNC (its figures for 4 ranks; for 8,
# "W = 10 saved 46 %"), beside ours where the protocol is theirs.
PAPER_N4 = {"SSP(2)": 64.9, "SSP(10)": 60.3, "SSP(16)": 60.1, "SSP(32)": 58.7, "SSP(48)": 58.4,
            "ASYNC": 55.5}
PAPER_JCT = {("policies-sim", "paper"): PAPER_N4, ("paper-scale", "wall-n4-timing"): PAPER_N4,
             ("paper-scale", "n8"): {"SSP(10)": 54.0}}


def table_policies(figure, scenario, default_bound, waits=False, per_rank=False):
    """Every policy of `scenario` side by side from the records of `figure`,
    with ADAPTIVE's verdict: the bound is VERDICT_BOUND's for the scenarios
    built so that no fixed policy is right, else `default_bound` (1.05 in
    the simulator; 1.0, "no later", for the demo with real processes)."""
    def make():
        records = [r for r in read_records(figure) if r.get("scenario") == scenario]
        if not records:
            return no_records(figure, "scripts/reproduce.sh", scenario)
        bound = VERDICT_BOUND.get(scenario, default_bound)
        table = policy_table(records, waits=waits, paper=PAPER_JCT.get((figure, scenario)),
                             per_rank=per_rank)
        verdict = adaptive_verdict(records, bound=bound)
        return table + ([""] + verdict if verdict else []) + ["", machines_line(records)]
    return make


# The paper-scale figure's scenarios (scripts/reproduce.sh).
PAPER_SCALE = ["n8", "n16", "n64-timing", "wall-n4-timing", "heterogeneous-n8", "failure-short"]


def table_comm():
    """Per point (workers, elements, row): Serene's time over Gloo's best
    allreduce within each run, median (min–max) over the runs; the absolute
    medians; the issue-9 target at N = 4."""
    records = read_records("comm")
    if not records:
        return no_records("comm", "scripts/reproduce.sh, or scripts/comm_sweep.sh --runs 5 and "
                          "evidence.py record-comm")
    points = {}
    for r in records:
        points.setdefault(comm_point(r), []).append(r)
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


# ------------------------------------------- baselines and training curves

def demo_real(scenario):
    return [r for r in read_records("demo-real") if r.get("scenario") == scenario]


def table_baselines():
    """Serene SYNC against Gloo's two allreduce algorithms on the demo's job
    (demo-real, scenario "gloo"): per run, its time split into compute and
    communication (and the barrier's part of it: under Gloo the whole
    allreduce), and Serene SYNC's JCT over each Gloo run's, seed by seed."""
    records = demo_real("gloo")
    if not records:
        return no_records("demo-real", "scripts/reproduce.sh --only demo-real:gloo", "gloo")
    seeds = sorted({r["seed"] for r in records})
    runs = {(r["seed"], r["label"]): r for r in records}
    labels = list(dict.fromkeys(r["label"] for r in records))
    ms = lambda x: f"{1e3 * x:.2f}"
    lines = [f"{len(seeds)} seeds ({', '.join(map(str, seeds))}); median (min–max) over seeds.",
             "", "| run | JCT (s) | compute per iteration (ms) | communication per iteration "
             "(ms) | communication share of a step (%) | of it, waiting at the barrier (%) | "
             "iterations | final accuracy |",
             "|---|---|---|---|---|---|---|---|"]
    for label in labels:
        rs = [runs[(s, label)] for s in seeds if (s, label) in runs]
        col = lambda key: [r.get(key) for r in rs]
        barrier = [100 * r["barrier_wait_total_s"] / r["wait_total_s"] for r in rs
                   if r.get("wait_total_s") and r.get("barrier_wait_total_s") is not None]
        lines.append(
            f"| {'Serene ' if label == 'SYNC' else ''}{label} | "
            f"{fmt_range(col('jct_s'), lambda x: f'{x:.2f}')} | "
            f"{fmt_range(col('compute_per_iteration_s'), ms)} | "
            f"{fmt_range(col('comm_per_iteration_s'), ms)} | "
            f"{fmt_range(col('comm_share_pct'), lambda x: f'{x:.1f}')} | "
            f"{fmt_range(barrier, lambda x: f'{x:.0f}')} | "
            f"{fmt_range(col('iterations'), lambda x: f'{x:.0f}')} | "
            f"{fmt_range(col('final_accuracy'), lambda x: f'{x:.4f}')} |")
    lines.append("")
    for label in labels:
        if label == "SYNC":
            continue
        ratios = [runs[(s, "SYNC")]["jct_s"] / runs[(s, label)]["jct_s"] for s in seeds
                  if (s, "SYNC") in runs and (s, label) in runs]
        if ratios:
            lines.append(f"Serene SYNC's JCT over {label}'s, seed by seed: "
                         f"**{fmt_range(ratios, lambda x: f'{x:.2f}')}**.")
    return lines + ["", machines_line(records)]


def table_training_curve():
    """Rank 0's test accuracy every 100 steps of the demo's job under Serene
    SYNC and Gloo (demo-real, scenario "gloo"): median (min–max) over seeds,
    up to the step every run reached."""
    records = demo_real("gloo")
    curves = [r for r in records if r.get("accuracy_curve")]
    if not curves:
        return no_records("demo-real", "scripts/reproduce.sh --only demo-real:gloo", "gloo")
    labels = list(dict.fromkeys(r["label"] for r in curves))
    last = min(r["accuracy_curve"][-1][0] for r in curves)
    at = {}
    for r in curves:
        for step, acc in r["accuracy_curve"]:
            at.setdefault((r["label"], step), []).append(acc)
    steps = sorted({s for (_, s) in at if s % 100 == 0 and s <= last})
    f4 = lambda x: f"{x:.4f}"
    lines = [f"{len({r['seed'] for r in curves})} seeds; median (min–max) over seeds.", "",
             "| step | " + " | ".join(("Serene " if x == "SYNC" else "") + x for x in labels) +
             " |", "|---|" + "---|" * len(labels)]
    for step in steps:
        lines.append(f"| {step} | " + " | ".join(fmt_range(at.get((x, step), []), f4)
                                                 for x in labels) + " |")
    f0 = lambda v: f"{v:.0f}"
    ends = [f"{('Serene ' if x == 'SYNC' else '') + x}: "
            f"{fmt_range([r['iterations'] for r in curves if r['label'] == x], f0)}"
            for x in labels]
    # The runs of one seed against each other, at every step both evaluated.
    by_seed = {}
    for r in curves:
        by_seed.setdefault(r["seed"], []).append(dict(map(tuple, r["accuracy_curve"])))
    gap = max((abs(a[k] - b[k]) for cs in by_seed.values() for a in cs for b in cs
               for k in a if k in b), default=0.0)
    lines += ["", "Iterations to the target (0.84): " + "; ".join(ends) + ". Largest "
              f"difference between two runs of one seed at one evaluation: {gap:.4f}."]
    return lines + ["", machines_line(records)]


# ------------------------------------------------------------ the Python API

def record_pytorch(args):
    """Records scripts/pytorch_bench.py's runs (OUT/runs.jsonl) in
    docs/data/pytorch.jsonl: per run its median step, communication per step
    (median and mean), time to target and final accuracy."""
    if not os.path.exists(args.out):
        fail(f"no {args.out} (scripts/pytorch_bench.py --out DIR writes DIR/runs.jsonl)")
    m = machine()
    records = []
    with open(args.out) as f:
        for line in f:
            if not line.strip():
                continue
            run = json.loads(line)
            comm = run.get("comm_step_s") or []
            records.append(dict(
                m, figure="pytorch", scenario=f"n{run['world_size']}", config=run["config"],
                rep=run["rep"], world_size=run["world_size"], batch=run["batch"],
                steps=run["steps"], eval_images=run.get("eval_images"), target=run["target"],
                median_step_s=run["median_step_s"],
                median_comm_step_s=run.get("median_comm_step_s"),
                mean_comm_step_s=run["comm_s_per_step"] if comm else None,
                time_to_target_s=run.get("time_to_target_s"),
                final_accuracy=run.get("final_accuracy")))
    if not records:
        fail(f"no runs in {args.out}")
    for scenario in sorted({r["scenario"] for r in records}):
        replace_records("pytorch", scenario, [r for r in records if r["scenario"] == scenario])


PYTORCH_CONFIGS = ["ddp-gloo", "ddp-gloo-timed", "ddp-serene", "opt-sync", "opt-ssp4",
                   "opt-adaptive"]


def pytorch_by_config(records):
    order = {c: i for i, c in enumerate(PYTORCH_CONFIGS)}
    out = {}
    for r in sorted(records, key=lambda r: (order.get(r["config"], len(order)), r["rep"])):
        out.setdefault(r["config"], []).append(r)
    return out


def table_pytorch():
    records = [r for r in read_records("pytorch") if r.get("scenario") == "n4"]
    if not records:
        return no_records("pytorch", "scripts/reproduce.sh --only python:pytorch")
    r0 = records[0]
    ms = lambda x: f"{1e3 * x:.1f}"
    lines = [f"{r0['world_size']} ranks, {r0['steps']} steps of {r0['batch']} images per rank, "
             f"target accuracy {r0['target']} on {r0['eval_images']} test images. Step and "
             "communication time: each run's median step (and mean); time to target and final "
             "accuracy: each run's; then the median of the runs (min–max).", "",
             "| configuration | runs | step time (ms) | communication per step (ms) | mean "
             "communication per step (ms) | time to target (s) (runs reaching it) | final "
             "accuracy |", "|---|---|---|---|---|---|---|"]
    for config, rs in pytorch_by_config(records).items():
        tta = [r["time_to_target_s"] for r in rs]
        lines.append(
            f"| {config} | {len(rs)} | {fmt_range([r['median_step_s'] for r in rs], ms)} | "
            f"{fmt_range([r['median_comm_step_s'] for r in rs], ms)} | "
            f"{fmt_range([r['mean_comm_step_s'] for r in rs], ms)} | "
            f"{fmt_range(tta, lambda x: f'{x:.1f}')} ({sum(t is not None for t in tta)}/{len(rs)})"
            f" | {fmt_range([r['final_accuracy'] for r in rs], lambda x: f'{x:.4f}')} |")
    lines.append("")
    for key, what in (("median_comm_step_s", "median step"), ("mean_comm_step_s", "mean")):
        by_rep = {}
        for r in records:
            by_rep.setdefault(r["rep"], {})[r["config"]] = r
        ratios = [b["ddp-serene"][key] / b["ddp-gloo-timed"][key] for b in by_rep.values()
                  if "ddp-serene" in b and "ddp-gloo-timed" in b and b["ddp-serene"][key]
                  and b["ddp-gloo-timed"][key]]
        if ratios:
            lines.append(f"ddp-serene's communication time per step ({what}) over "
                         f"ddp-gloo-timed's, paired by repetition: "
                         f"**{fmt_range(ratios, lambda x: f'{x:.2f}')}**.")
    return lines + ["", machines_line(records)]


def plot_pytorch():
    """Step and communication time per configuration (median, min–max)."""
    records = [r for r in read_records("pytorch") if r.get("scenario") == "n4"]
    if not records:
        return
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "p.dat")
        with open(dat, "w") as f:
            for config, rs in pytorch_by_config(records).items():
                cells = []
                for key in ("median_step_s", "median_comm_step_s"):
                    xs = [1e3 * r[key] for r in rs if r.get(key) is not None] or [0.0]
                    cells += [statistics.median(xs), min(xs), max(xs)]
                f.write(f"{config} " + " ".join(f"{x:.3f}" for x in cells) + "\n")
        out = os.path.join(DOCS, "img", "pytorch-n4.png")
        script = f"""set terminal pngcairo size 900,450 font ",10"
set output "{out}"
set title "PyTorch on Serene vs gloo, {records[0]['world_size']} ranks: median per step (min-max)"
set ylabel "ms"
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.6 border -1
set key top left
set xtics rotate by -20
set yrange [0:*]
plot "{dat}" using 2:3:4:xtic(1) title "step time", "" using 5:6:7 title "communication time"
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


# Issue 11's goal for the Python example: the final accuracy within 0.5 pt
# of serene-train's at every seed.
PY_VS_CPP_BOUND_PT = 0.5


def final_accuracy_of(metrics):
    points = [p["accuracy"] for p in metrics.get("timeline") or [] if p.get("accuracy") is not None]
    return points[-1] if points else None


def record_python_vs_cpp(args):
    """Records one seed of scripts/python_vs_cpp.sh --out OUT (OUT/cpp-0.json,
    OUT/py.json) in docs/data/python-vs-cpp.jsonl."""
    paths = {k: os.path.join(args.out, f) for k, f in (("cpp", "cpp-0.json"), ("py", "py.json"))}
    runs = {}
    for k, path in paths.items():
        if not os.path.exists(path):
            fail(f"no {path} (scripts/python_vs_cpp.sh --out {args.out} writes it)")
        with open(path) as f:
            runs[k] = json.load(f)
    record = dict(machine(), figure="python-vs-cpp", scenario="mlp", seed=args.seed,
                  cpp_accuracy=final_accuracy_of(runs["cpp"]),
                  python_accuracy=final_accuracy_of(runs["py"]),
                  cpp_iterations=runs["cpp"].get("iterations"),
                  python_iterations=runs["py"].get("iterations"))
    if record["cpp_accuracy"] is None or record["python_accuracy"] is None:
        fail(f"no final accuracy in {args.out}'s metrics")
    others = [] if args.fresh else [r for r in read_records("python-vs-cpp")
                                    if r.get("scenario") == "mlp" and r["seed"] != args.seed]
    replace_records("python-vs-cpp", "mlp", others + [record])


def table_python_vs_cpp():
    records = sorted((r for r in read_records("python-vs-cpp") if r.get("scenario") == "mlp"),
                     key=lambda r: r["seed"])
    if not records:
        return no_records("python-vs-cpp", "scripts/reproduce.sh --only python:vs-cpp")
    lines = ["| seed | steps | C++ `serene-train` final accuracy | Python example | difference |",
             "|---|---|---|---|---|"]
    diffs = []
    for r in records:
        d = 100 * (r["python_accuracy"] - r["cpp_accuracy"])
        diffs.append(d)
        lines.append(f"| {r['seed']} | {r['cpp_iterations']} | {r['cpp_accuracy']:.4f} | "
                     f"{r['python_accuracy']:.4f} | {d:+.2f} pt |")
    worst = max(abs(d) for d in diffs)
    lines += ["", f"Largest difference {worst:.2f} pt over {len(records)} seeds; goal within "
              f"{PY_VS_CPP_BOUND_PT} pt at every seed: "
              f"{'met' if worst <= PY_VS_CPP_BOUND_PT else 'not met'}.", "",
              machines_line(records)]
    return lines


# ----------------------------------------------------------------- the soak

def record_soak(args):
    """Records a scripts/soak.sh run (OUT/summary.json) in docs/data/soak.jsonl;
    a run replaces the earlier one of the same length."""
    if not os.path.exists(args.out):
        fail(f"no {args.out} (scripts/soak.sh --out DIR writes DIR/summary.json)")
    with open(args.out) as f:
        summary = json.load(f)
    scenario = f"{args.seconds}s"
    replace_records("soak", scenario, [dict(machine(), figure="soak", scenario=scenario,
                                            **summary)])


def table_soak():
    records = read_records("soak")
    if not records:
        return no_records("soak", "scripts/reproduce.sh --only soak")
    lines = ["| run | rounds | serene-bench runs OK | clocks | INC rows applied (exactly once) | "
             "duplicate INC rows ignored | client retransmissions / NACKs | datagrams through "
             "the injectors (rx / tx) | RSS of the switch after the first round | violations |",
             "|---|---:|---:|---:|---:|---:|---|---|---|---:|"]
    k = lambda n: f"{n / 1e3:,.0f} k" if n < 1e6 else f"{n / 1e6:.1f} M"
    for r in sorted(records, key=lambda r: r["seconds"]):
        fx = r.get("exit_faults") or {}
        both = lambda key: " / ".join(k(fx[d].get(key, 0)) for d in ("rx", "tx") if d in fx)
        balanced = all(v.get("offered", 0) + v.get("duplicated", 0) ==
                       v.get("delivered", 0) + v.get("dropped", 0) for v in fx.values())
        lines.append(
            f"| `scripts/soak.sh --seconds {r['scenario'][:-1]}`, {r['jobs']} jobs × "
            f"{r['workers']} ranks, {r['elements']:,} values, `{r['fault']}` | {r['rounds']} | "
            f"{r['runs_ok']}/{r['runs']} | {r['clocks_total']:,} | {r['inc_rows_applied']:,} | "
            f"{r['duplicates_ignored']:,} | {r['retransmissions']:,} / {r['nacks']:,} | "
            f"{both('offered')} offered; {both('dropped')} dropped, {both('duplicated')} "
            f"duplicated, {both('reordered')} reordered, {both('delayed')} delayed; "
            f"offered + duplicated = delivered + dropped: {'yes' if balanced else '**no**'} | "
            f"{r['rss_first_kib'] / 1024:.1f} MiB, last {r['rss_last_kib'] / 1024:.1f}, max "
            f"{r['rss_max_kib'] / 1024:.1f} MiB (slope {r['rss_slope_kib_per_min']:.0f} KiB/min)"
            f" | {r['violations']} |")
    return lines + ["", machines_line(records)]


# ------------------------------------------------------------------ fuzzing

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


def record_fuzz(args):
    """scripts/fuzz.sh --summary FILE: a target's run replaces its earlier
    one of the same length."""
    record_summary_lines(args.out, "fuzz", lambda run: f"{run['target']}-{run['seconds']}s",
                         "scripts/fuzz.sh --summary FILE")


def table_fuzz():
    records = read_records("fuzz")
    if not records:
        return no_records("fuzz", "scripts/reproduce.sh --only fuzz")
    lines = ["| target | time | executions | exec/s | coverage (edges / features) | corpus | "
             "findings |", "|---|---:|---:|---:|---|---|---|"]
    count = lambda n: f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.1f} k"
    for r in sorted(records, key=lambda r: (r["seconds"], r["target"])):
        lines.append(
            f"| {r['target']} | {r['seconds']} s | {count(r['executions'])} | "
            f"{r['executions'] / r['seconds']:,.0f} | {r['edges']} / {r['features']} | "
            f"{r['corpus_files']} inputs, {r['corpus_bytes'] / 1024:.1f} KiB | "
            f"{'**yes**' if r['findings'] else 'none'} |")
    return lines + ["", machines_line(records)]


# --------------------------------------------------------------- sanitizers

def record_sanitizers(args):
    """scripts/sanitizers.sh's summary: a mode's run replaces its earlier one."""
    record_summary_lines(args.out, "sanitizers", lambda run: run["mode"],
                         "SERENE_SANITIZERS_SUMMARY=FILE scripts/sanitizers.sh")


def table_sanitizers():
    records = read_records("sanitizers")
    if not records:
        return no_records("sanitizers", "scripts/reproduce.sh --only sanitizers")
    mins = lambda s: f"{s // 60} min {s % 60:02d} s"
    lines = ["| mode | result | tests | reports | build | tests' time |",
             "|---|---|---:|---:|---|---|"]
    for r in sorted(records, key=lambda r: r["mode"]):
        lines.append(f"| {r['mode']} | {'passed' if r['passed'] else '**failed**'} | "
                     f"{r['tests'] - r['failed']}/{r['tests']} passed | {r['reports']} | "
                     f"{mins(r['build_s'])} | {mins(r['tests_s'])} |")
    return lines + ["", machines_line(records)]


def generators():
    gens = {"demo-real": table_policies("demo-real", "demo", 1.0),
            "demo-real-slowdown-floor": table_policies("demo-real", "slowdown-floor", 1.0),
            "demo-real-straggler": table_policies("demo-real", "straggler", 1.0, waits=True,
                                                  per_rank=True),
            "demo-real-gloo": table_baselines,
            "training-curve": table_training_curve,
            "pytorch-n4": table_pytorch,
            "python-vs-cpp": table_python_vs_cpp,
            "soak": table_soak,
            "fuzz": table_fuzz,
            "sanitizers": table_sanitizers,
            "comm": table_comm,
            "sim-validation-n4": table_validation("n4"),
            "sim-validation-n8": table_validation("n8"),
            "sim-validation-n4-floor": table_validation("n4-floor"),
            "sim-validation-n8-floor": table_validation("n8-floor")}
    for scenario in sorted({r["scenario"] for r in read_records("policies-sim")} |
                           {"demo", "paper", "heterogeneous", "failure", "momentum", "slowdown",
                            "comego",
                            "cnn"}):
        gens[f"policies-sim-{scenario}"] = table_policies("policies-sim", scenario, 1.05,
                                                           waits=True)
    for binary in MICRO:
        gens[f"micro-{binary}"] = table_micro(binary)
    gens["micro-flood_bench"] = table_flood
    gens["scale"] = table_scale
    gens["faults-summary"] = table_faults_summary
    gens["faults-cases"] = table_faults_cases
    gens["p4-verified"] = table_p4
    gens["durations"] = table_durations
    for scenario in PAPER_SCALE:
        gens[f"paper-scale-{scenario}"] = table_policies("paper-scale", scenario, 1.05,
                                                         waits=True)
    return gens


MARKER = re.compile(r"(<!-- generated: ([\w.-]+) -->\n)(.*?)(<!-- /generated: \2 -->)", re.S)


def regenerate(text, gens, path, unknown):
    def sub(m):
        name = m.group(2)
        if name not in gens:
            unknown.append(f"{os.path.relpath(path, ROOT)}: {name}")
            return m.group(0)
        body = "\n".join(gens[name]()) + "\n"
        return m.group(1) + body + m.group(4)
    return MARKER.sub(sub, text)


def tables(args):
    gens = generators()
    unknown, stale = [], []
    for path in sorted(glob.glob(os.path.join(DOCS, "*.md"))):
        with open(path) as f:
            text = f.read()
        new = regenerate(text, gens, path, unknown)
        if new == text:
            continue
        if args.check:
            stale.append(path)
            with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as tmp:
                tmp.write(new)
            subprocess.run(["diff", "-u", path, tmp.name])
            os.unlink(tmp.name)
        else:
            with open(path, "w") as f:
                f.write(new)
            print(f"evidence: tables rewritten in {os.path.relpath(path, ROOT)}")
    if unknown:
        fail("unknown generated tables (no generator of that name): " + ", ".join(unknown))
    if stale:
        fail("tables differ from what docs/data gives: " +
             ", ".join(os.path.relpath(p, ROOT) for p in stale) +
             " (run /usr/bin/python3 scripts/evidence.py tables)")


# -------------------------------------------------------------------- plots

def plots(args):
    """JCT as % of SYNC per scenario and run, median with min–max bars (the
    policies-sim and paper-scale figures, and the two demos with real
    processes); the comm figure's time per
    iteration against model size; the adaptive policy's window over time;
    the scale sweep."""
    plot_comm()
    plot_windows()
    plot_scale()
    plot_pct_of_sync("policies-sim", "policies-sim.png")
    plot_pct_of_sync("paper-scale", "paper-scale.png")
    plot_pct_of_sync("demo-real", "demo-real.png", scenarios=("demo", "slowdown-floor"))
    plot_pytorch()


def plot_pct_of_sync(figure, image, scenarios=None):
    by = by_scenario(r for r in read_records(figure)
                     if scenarios is None or r.get("scenario") in scenarios)
    if not by:
        return
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "p.dat")
        rows = []
        for scenario in sorted(by):
            for label, pct in pct_of_sync_by_label(by[scenario]).items():
                if pct:
                    rows.append((f"{scenario}:{label}", statistics.median(pct), min(pct),
                                 max(pct)))
        with open(dat, "w") as f:
            for i, (name, med, lo, hi) in enumerate(rows):
                f.write(f'{i} "{name}" {med} {lo} {hi}\n')
        out = os.path.join(DOCS, "img", image)
        script = f"""set terminal pngcairo size {max(700, 26 * len(rows) + 200)},560 font ",9"
set output "{out}"
set style fill solid 0.6
set rmargin 8
set boxwidth 0.7
set ylabel "JCT, % of SYNC (median, min-max over seeds)"
set xtics rotate by -60 nomirror
set yrange [0:*]
set grid ytics
unset key
plot "{dat}" using 1:3:xtic(2) with boxes, "" using 1:3:4:5 with yerrorbars lc rgb "black" pt 0
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


def plot_comm():
    """Per-iteration time against model size at N = 4 (medians over runs):
    Serene at both row widths, Gloo's best and default allreduce."""
    records = [r for r in read_records("comm") if r["workers"] == COMM_TARGET_WORKERS]
    if not records:
        return
    series = {}
    for r in records:
        series.setdefault((r["row"], r["elements"]), []).append(r)
    rows = sorted({row for row, _ in series})
    with tempfile.TemporaryDirectory() as tmp:
        plots_ = []
        for row in rows:
            dat = os.path.join(tmp, f"row{row}.dat")
            with open(dat, "w") as f:
                for (rw, e), rs in sorted(series.items()):
                    if rw != row:
                        continue
                    med = lambda key: statistics.median(r[key] for r in rs if r.get(key))
                    f.write(f"{e} {med('serene_ms')} {med('gloo_best_ms')} "
                            f"{med('gloo_default_ms')}\n")
            plots_.append(f'"{dat}" using 1:2 with linespoints lw 2 title "Serene, rows of {row}"')
        # Gloo does not depend on Serene's row: its series from the widest rows' runs.
        gdat = os.path.join(tmp, f"row{rows[-1]}.dat")
        plots_ += [f'"{gdat}" using 1:3 with linespoints lw 2 title "Gloo, best algorithm"',
                   f'"{gdat}" using 1:4 with linespoints lw 2 title "Gloo, default (PyTorch\'s)"']
        out = os.path.join(DOCS, "img", "comm_vs_gloo.png")
        script = f"""set terminal pngcairo size 900,560 noenhanced
set output "{out}"
set title "Per-iteration time vs model size, {COMM_TARGET_WORKERS} workers (median over runs)"
set logscale xy
set xlabel "model size (int32 elements)"
set ylabel "ms per iteration (exchange / allreduce)"
set key top left
set grid
plot {", ".join(plots_)}
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


def plot_scale(records=None, out=None):
    """Clocks per second and the switch's CPU per rank-clock against ranks
    (medians over the runs of each point): docs/img/scale.png from the
    committed records, or `out` from a sweep's own `records`."""
    if records is None:
        records = read_records("scale")
    if not records:
        return
    by = {}
    for r in records:
        by.setdefault(r["ranks"], []).append(r)
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "scale.dat")
        with open(dat, "w") as f:
            for n, rs in sorted(by.items()):
                f.write(f"{n} {statistics.median(r['clocks_per_s'] for r in rs)} "
                        f"{statistics.median(r['switch_cpu_us_per_rank_clock'] for r in rs)}\n")
        out = out or os.path.join(DOCS, "img", "scale.png")
        cores = records[0].get("cores", os.cpu_count())
        script = f"""set terminal pngcairo size 900,520 noenhanced
set output "{out}"
set title "One switch, N worker processes on {cores} cores (SYNC, median over runs)"
set logscale x 2
set xlabel "ranks"
set ylabel "clocks per second"
set y2label "switch CPU per clock of one rank (us)"
set ytics nomirror
set y2tics
set key top right
set grid
plot "{dat}" using 1:2 with linespoints lw 2 title "clocks/s (all ranks share the cores)", \\
     "{dat}" using 1:3 axes x1y2 with linespoints lw 2 title "switch CPU us per rank-clock"
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


def plot_scale_sweep(args):
    plot_scale(read_scale_sweep(args.out), args.png)


def window_value(rule):
    """The window a rule text stands for, for plotting: sync 0, ssp:W W,
    a quorum (the slower ranks left out) QUORUM_Y, async (and anything
    unbounded) ASYNC_Y."""
    if rule == "sync":
        return 0
    if rule.startswith("quorum:"):
        return QUORUM_Y
    m = re.fullmatch(r"ssp:(\d+)", rule)
    return int(m.group(1)) if m else ASYNC_Y


QUORUM_Y = 96
ASYNC_Y = 128


def plot_windows():
    """The adaptive policy's window over each scenario's run (seed 1)."""
    by = by_scenario(read_records("policies-sim"))
    series = []
    for scenario in sorted(by):
        runs = [r for r in by[scenario] if r["label"] == "ADAPTIVE" and r["seed"] == 1]
        if not runs or "policy_change_s" not in runs[0] or not runs[0]["jct_s"]:
            continue
        r = runs[0]
        points = list(zip(r["policy_change_s"], (window_value(x) for x in r["policy_changes"])))
        if not points or points[0][0] > 0:  # the job's rule (sync) until the first change
            points.insert(0, (0.0, 0))
        points.append((r["jct_s"], points[-1][1] if points else 0))
        series.append((scenario, [(t / r["jct_s"], w) for t, w in points]))
    if not series:
        return
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for i, (name, pts) in enumerate(series):
            dat = os.path.join(tmp, f"{i}.dat")
            with open(dat, "w") as f:
                for t, w in pts:
                    f.write(f"{t} {w}\n")
            plots.append(f'"{dat}" using 1:2 with steps lw 2 title "{name}"')
        out = os.path.join(DOCS, "img", "adaptive-window.png")
        script = f"""set terminal pngcairo size 900,420 font ",10"
set output "{out}"
set xlabel "time, fraction of the run's JCT (seed 1)"
set ylabel "window W (quorum: slower ranks left out)"
set yrange [-4:{ASYNC_Y + 8}]
set ytics ("sync" 0, "16" 16, "32" 32, "64" 64, "quorum" {QUORUM_Y}, "async" {ASYNC_Y})
set xrange [0:1]
set grid ytics
set key outside right
plot {", ".join(plots)}
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("record-sim", help="records a serene-sim --seeds output (or several: "
                       "the parts of one sweep)")
    s.add_argument("out", nargs="+")
    s.add_argument("--commit", help="the commit the sweep ran at, if not HEAD (a sweep recorded "
                   "after later commits that do not change what it measures)")
    s.add_argument("--figure", required=True)
    s.add_argument("--scenario", required=True)
    s.add_argument("--label", action="append",
                   help="record only the runs with this label (repeat for more; labels may "
                   "hold commas, as QUORUM(3,inf) does)")
    s.add_argument("--merge", action="store_true",
                   help="keep the scenario's other records; replace only the same seed and label")
    s.set_defaults(func=record_sim)
    s = sub.add_parser("record-experiment", help="records one serene-experiment output")
    s.add_argument("out")
    s.add_argument("--figure", required=True)
    s.add_argument("--scenario", required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--commit", help="the commit the run was made at, if not HEAD")
    s.add_argument("--fresh", action="store_true",
                   help="drop the scenario's earlier records (the first seed of a sweep)")
    s.set_defaults(func=record_experiment)
    s = sub.add_parser("record-validation",
                       help="records a scripts/sim_validation.sh output of one size (OUT/nN)")
    s.add_argument("out")
    s.add_argument("--scenario", required=True, help="n4 or n8")
    s.add_argument("--commit", help="the commit the runs were made at, if not HEAD")
    s.set_defaults(func=record_validation)
    s = sub.add_parser("record-bench", help="records a Google Benchmark JSON output "
                       "(--benchmark_out_format=json) in docs/data/micro.jsonl")
    s.add_argument("out")
    s.add_argument("--binary", help="the benchmark binary's name (default: from the output)")
    s.set_defaults(func=record_bench)
    s = sub.add_parser("record-scale", help="records a scripts/scale_sweep.sh output "
                       "(OUT.jsonl) in docs/data/scale.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_scale)
    s = sub.add_parser("plot-scale", help="draws a scripts/scale_sweep.sh output (OUT.jsonl), "
                       "recorded or not, as a PNG")
    s.add_argument("out")
    s.add_argument("--png", required=True)
    s.set_defaults(func=plot_scale_sweep)
    s = sub.add_parser("record-faults", help="records a fault matrix run's rows "
                       "(SERENE_FAULT_MATRIX_REPORT=FILE) in docs/data/faults.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_faults)
    s = sub.add_parser("record-p4", help="records one check of the P4 program in BMv2 from "
                       "its output (reproduce.sh --only p4)")
    s.add_argument("out")
    s.add_argument("--check", required=True, choices=P4_CHECKS)
    s.add_argument("--started", type=float,
                   help="when the check started (seconds since the epoch): records its duration")
    s.set_defaults(func=record_p4)
    s = sub.add_parser("record-time", help="records how long one part of scripts/reproduce.sh "
                       "took (reproduce.sh calls it)")
    s.add_argument("--part", required=True, help="FIGURE:SCENARIO or FIGURE, as reproduce.sh "
                   "--parts lists")
    s.add_argument("--started", type=float, required=True,
                   help="when the part started (seconds since the epoch)")
    s.add_argument("--quick", action="store_true", help="a part of a --quick run")
    s.set_defaults(func=record_time)
    s = sub.add_parser("record-comm", help="records a scripts/comm_sweep.sh output (OUT.jsonl)")
    s.add_argument("out")
    s.set_defaults(func=record_comm)
    s = sub.add_parser("record-pytorch", help="records a scripts/pytorch_bench.py output "
                       "(OUT/runs.jsonl) in docs/data/pytorch.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_pytorch)
    s = sub.add_parser("record-python-vs-cpp", help="records one seed of "
                       "scripts/python_vs_cpp.sh --out OUT in docs/data/python-vs-cpp.jsonl")
    s.add_argument("out")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--fresh", action="store_true",
                   help="drop the earlier seeds' records (the first seed of a sweep)")
    s.set_defaults(func=record_python_vs_cpp)
    s = sub.add_parser("record-soak", help="records a scripts/soak.sh run (OUT/summary.json) "
                       "in docs/data/soak.jsonl")
    s.add_argument("out")
    s.add_argument("--seconds", type=int, required=True, help="the run's --seconds")
    s.set_defaults(func=record_soak)
    s = sub.add_parser("record-fuzz", help="records scripts/fuzz.sh --summary FILE in "
                       "docs/data/fuzz.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_fuzz)
    s = sub.add_parser("record-sanitizers", help="records scripts/sanitizers.sh's summary "
                       "(SERENE_SANITIZERS_SUMMARY=FILE) in docs/data/sanitizers.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_sanitizers)
    s = sub.add_parser("tables", help="rewrites every generated table in docs/")
    s.add_argument("--check", action="store_true",
                   help="change nothing; fail if a table differs from its records")
    s.set_defaults(func=tables)
    s = sub.add_parser("plots", help="redraws the plots made from docs/data")
    s.set_defaults(func=plots)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
