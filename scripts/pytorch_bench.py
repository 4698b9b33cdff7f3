#!/usr/bin/python3
"""The PyTorch paths side by side (docs/python.md, "Measured side by side").

    PYTHONPATH=build/python /usr/bin/python3 scripts/pytorch_bench.py --runs 5

Runs examples/ddp_resnet.py and examples/optimizer_resnet.py under torchrun
with --nproc ranks on this machine, against one serene-switch it starts (its
runtime API on a free loopback port; rank 0 creates and deletes each job):

  ddp-gloo          DDP with its own allreduce (gloo), overlapped with the backward pass
  ddp-gloo-timed    DDP with gloo's allreduce waited for bucket by bucket (its time measured)
  ddp-serene        DDP with serene.torch.allreduce_hook (SYNC)
  opt-sync, opt-ssp4, opt-adaptive
                    serene.torch.DistributedOptimizer under SYNC, SSP(4), policies/adaptive.lua

Repetitions are interleaved (every configuration once, then again) so that
the load of a shared machine spreads over all of them. Every run's rank-0
record goes to OUT/runs.jsonl (default docs/data/pytorch-n4/); OUT/summary.md
gets the table (median of the runs with min-max) and --plot
(docs/img/pytorch-n4.png) the plot (gnuplot). A benchmark, not a test:
nothing here passes or fails on a number.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "ddp-gloo": ("examples/ddp_resnet.py", ["--comm", "gloo"], {}),
    "ddp-gloo-timed": ("examples/ddp_resnet.py", ["--comm", "gloo-timed"], {}),
    "ddp-serene": ("examples/ddp_resnet.py", ["--comm", "serene"], {}),
    "opt-sync": ("examples/optimizer_resnet.py", [], {"SERENE_POLICY": "sync"}),
    "opt-ssp4": ("examples/optimizer_resnet.py", [], {"SERENE_POLICY": "ssp:4"}),
    "opt-adaptive": ("examples/optimizer_resnet.py", [],
                     {"SERENE_POLICY": str(ROOT / "policies" / "adaptive.lua")}),
}


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine():
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{platform.node()}: {os.cpu_count()} cores ({model}), shared with other work"


def run_one(config, args, switch, out_dir, rep):
    script, flags, env_extra = CONFIGS[config]
    metrics = out_dir / f"{config}-{rep}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERENE_JOB", "SERENE_KEY"))}
    env.update(env_extra, SERENE_SWITCH=switch.address, SERENE_CONTROL=switch.control_address,
               PYTHONPATH=str(ROOT / "build" / "python"))
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(args.nproc),
               "--redirects", "2", "--tee", "2", "--master_addr", "127.0.0.1",
               "--master_port", str(free_port()), str(ROOT / script), *flags,
               "--steps", str(args.steps), "--eval-every", str(args.eval_every),
               "--target-accuracy", "0", "--metrics", str(metrics)]
    started = time.monotonic()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{config} run {rep} failed (exit {done.returncode})")
    record = json.loads(metrics.read_text())
    record.update(config=config, rep=rep, wall_s=time.monotonic() - started)
    # Time to target from the evaluations (the run does not stop there).
    reached = [e for e in record["evals"] if e["accuracy"] >= args.target]
    record["target"] = args.target
    record["time_to_target_s"] = reached[0]["time_s"] if reached else None
    record["median_step_s"] = statistics.median(record["step_s"])
    record["median_comm_step_s"] = (statistics.median(record["comm_step_s"])
                                    if record["comm_step_s"] else None)
    return record


def spread(values, scale=1.0, digits=1):
    values = [v for v in values if v is not None]
    if not values:
        return "not reached"
    f = f"{{:.{digits}f}}"
    return (f"{f.format(statistics.median(values) * scale)} "
            f"({f.format(min(values) * scale)}–{f.format(max(values) * scale)})")


def paired(records):
    """The hook's communication time over gloo's, run by run (same repetition)."""
    lines = []
    for key, what in (("median_comm_step_s", "median step"), ("comm_s_per_step", "mean")):
        ratios = []
        for rep in sorted({r["rep"] for r in records}):
            by = {r["config"]: r for r in records if r["rep"] == rep}
            if "ddp-serene" in by and "ddp-gloo-timed" in by:
                ratios.append(by["ddp-serene"][key] / by["ddp-gloo-timed"][key])
        if ratios:
            lines.append(f"\nddp-serene / ddp-gloo-timed communication time per step ({what}), "
                         f"paired by repetition: {spread(ratios, 1, 2)}; per run: "
                         + ", ".join(f"{x:.2f}" for x in ratios) + "\n")
    return "".join(lines)


def summarize(records, args, out_dir):
    rows = []
    data = []
    for config in args.configs:
        rs = [r for r in records if r["config"] == config]
        if not rs:
            continue
        step = [r["median_step_s"] for r in rs]
        comm = [r["median_comm_step_s"] for r in rs]
        tta = [r["time_to_target_s"] for r in rs]
        acc = [r["final_accuracy"] for r in rs]
        reached = sum(t is not None for t in tta)
        mean_comm = [r["comm_s_per_step"] if r["comm_step_s"] else None for r in rs]
        rows.append(f"| {config} | {len(rs)} | {spread(step, 1000)} | "
                    f"{spread(comm, 1000) if any(c is not None for c in comm) else '–'} | "
                    f"{spread(mean_comm, 1000) if any(c is not None for c in comm) else '–'} | "
                    f"{spread(tta)} ({reached}/{len(rs)}) | {spread(acc, 1, 4)} |")
        def med(v):
            v = [x for x in v if x is not None]
            return (statistics.median(v) * 1000, min(v) * 1000, max(v) * 1000) if v else (0, 0, 0)
        data.append((config, *med(step), *med(comm)))
    header = (f"{args.nproc} ranks, {args.steps} steps of {records[0]['batch']} images per rank, "
              f"target accuracy {args.target} on {args.eval_images} test images. Step and "
              f"communication time: each run's median step; time to target and final "
              f"accuracy: each run's; then the median of the runs (min–max). {machine()}.\n\n"
              "| configuration | runs | step time (ms) | communication time per step (ms) | "
              "mean communication time per step (ms) | "
              "time to target (s) (runs reaching it) | final accuracy |\n"
              "|---|---|---|---|---|---|---|\n")
    (out_dir / "summary.md").write_text(header + "\n".join(rows) + "\n" + paired(records))
    dat = out_dir / "summary.dat"
    dat.write_text("".join(f"{c} {' '.join(f'{x:.3f}' for x in v)}\n"
                           for c, *v in data))
    plot = f"""
set terminal pngcairo size 900,450 font ",10"
set output "{args.plot}"
set title "PyTorch on Serene vs gloo, {args.nproc} ranks: median per step (min-max)"
set ylabel "ms"
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.6 border -1
set key top left
set xtics rotate by -20
set yrange [0:*]
plot "{dat}" using 2:3:4:xtic(1) title "step time", "" using 5:6:7 title "communication time"
"""
    subprocess.run(["gnuplot"], input=plot, text=True, check=True)
    print((out_dir / "summary.md").read_text())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--steps", type=int, default=240)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--eval-images", type=int, default=2000)
    p.add_argument("--target", type=float, default=0.75)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--out", default=str(ROOT / "docs" / "data" / "pytorch-n4"))
    p.add_argument("--plot", default=str(ROOT / "docs" / "img" / "pytorch-n4.png"))
    p.add_argument("--summarize-only", action="store_true",
                   help="redo the table and plot from OUT/runs.jsonl")
    args = p.parse_args()
    args.configs = args.configs.split(",")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs_file = out_dir / "runs.jsonl"
    if not args.summarize_only:
        sys.path.insert(0, str(ROOT / "build" / "python"))
        from serene.launch import SwitchProcess, find_binary

        log = tempfile.mkstemp(prefix="serene-bench-switch-", suffix=".log")[1]
        switch = SwitchProcess(find_binary("serene-switch"), None, log, control="127.0.0.1:0")
        scratch = Path(tempfile.mkdtemp(prefix="serene-pytorch-bench-"))
        try:
            with runs_file.open("w") as f:
                for rep in range(1, args.runs + 1):
                    for config in args.configs:
                        record = run_one(config, args, switch, scratch, rep)
                        record["machine"] = machine()
                        f.write(json.dumps(record) + "\n")
                        f.flush()
                        comm = record["median_comm_step_s"] or float("nan")
                        print(f"{config} run {rep}: step {record['median_step_s'] * 1000:.1f} ms, "
                              f"comm {comm * 1000:.1f} ms/step, final "
                              f"{record['final_accuracy']:.4f}, target at "
                              f"{record['time_to_target_s']}", flush=True)
        finally:
            switch.stop()
    records = [json.loads(line) for line in runs_file.read_text().splitlines()]
    summarize(records, args, out_dir)


if __name__ == "__main__":
    main()
