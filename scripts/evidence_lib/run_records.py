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


def sim_results(outs):
    """The results.json of serene-sim --seeds outputs (OUT/seed-N/, or OUT/
    itself for one seed), in seed order, parsed."""
    seeds = []
    for out in outs:
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
    results = []
    for path in seeds:
        with open(path) as f:
            results.append(json.load(f))
    return results


# What a fixed run simulated again must repeat exactly for its record to stand
# beside a policy script's new runs (reproduce.sh --policy-only).
WITNESS_FIELDS = ("ok", "reached", "jct_s", "iterations", "final_accuracy", "wait_total_s",
                  "barrier_wait_total_s", "iterations_per_rank", "policy_changes")


def check_witness(witness, figure, scenario):
    """Fails unless every run under `witness` (fixed runs simulated again)
    equals its record of `scenario` in WITNESS_FIELDS."""
    recorded = {(r["seed"], r["label"]): r for r in read_records(figure)
                if r.get("scenario") == scenario}
    checked = 0
    for j in sim_results([witness]):
        seed = j["scenario"].get("seed")
        for run in j["runs"]:
            now = run_record(run, {})
            old = recorded.get((seed, run["label"]))
            if old is None:
                fail(f"{figure} {scenario}: no record of {run['label']}, seed {seed}, to check "
                     f"the witness against: run the part without --policy-only")
            for field in WITNESS_FIELDS:
                if now[field] != old.get(field):
                    fail(f"{figure} {scenario}: {run['label']}, seed {seed}, simulated again, "
                         f"does not repeat its record ({field}: recorded {old.get(field)}, now "
                         f"{now[field]}): the simulator changed since commit "
                         f"{old['commit'][:12]}; run the part without --policy-only")
            checked += 1
    print(f"evidence: {scenario}: the witness's {checked} fixed runs repeat their records")


def record_sim(args):
    """Records serene-sim --seeds outputs: one directory, or several whose
    seeds together make the sweep (reproduce.sh runs a sweep's seeds in one
    process per core)."""
    if args.witness and not args.merge:
        fail("--witness checks the records --merge keeps: give --merge too")
    if args.witness:
        check_witness(args.witness, args.figure, args.scenario)
    m = machine()
    if args.commit:
        m["commit"] = args.commit
    wanted = set(args.label) if args.label else None
    records = []
    for j in sim_results(args.out):
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
