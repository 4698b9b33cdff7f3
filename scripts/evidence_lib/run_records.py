"""The runs of serene-sim and serene-experiment as records (record-sim,
record-experiment): the policies-sim, paper-scale and demo-real figures."""
import glob
import json
import os
import re

from .common import fail, machine, read_records, replace_records


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
