"""The Python API's figures: the PyTorch paths (record-pytorch) and the
Python example against serene-train (record-python-vs-cpp)."""
import json
import os

from .common import (fail, fmt_range, group_by, machine, machines_line, no_records, read_records,
                     replace_records)


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
    return group_by(sorted(records, key=lambda r: (order.get(r["config"], len(order)), r["rep"])),
                    "config")


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
