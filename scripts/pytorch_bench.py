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
record goes to OUT/runs.jsonl; `scripts/evidence.py record-pytorch
OUT/runs.jsonl` records them in docs/data/pytorch.jsonl, from which the
table and plot of docs/python.md are made (scripts/reproduce.sh --only
python:pytorch does both). A benchmark, not a test: nothing here passes or
fails on a number.
"""

import argparse
import json
import os
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
    record.update(config=config, rep=rep, wall_s=time.monotonic() - started,
                  eval_every=args.eval_every, eval_images=args.eval_images)
    # Time to target from the evaluations (the run does not stop there).
    reached = [e for e in record["evals"] if e["accuracy"] >= args.target]
    record["target"] = args.target
    record["time_to_target_s"] = reached[0]["time_s"] if reached else None
    record["median_step_s"] = statistics.median(record["step_s"])
    record["median_comm_step_s"] = (statistics.median(record["comm_step_s"])
                                    if record["comm_step_s"] else None)
    return record


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--steps", type=int, default=240)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--eval-images", type=int, default=2000)
    p.add_argument("--target", type=float, default=0.75)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--out", required=True, help="a directory: OUT/runs.jsonl gets every run")
    args = p.parse_args()
    args.configs = args.configs.split(",")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs_file = out_dir / "runs.jsonl"
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
                    f.write(json.dumps(record) + "\n")
                    f.flush()
                    comm = record["median_comm_step_s"] or float("nan")
                    print(f"{config} run {rep}: step {record['median_step_s'] * 1000:.1f} ms, "
                          f"comm {comm * 1000:.1f} ms/step, final "
                          f"{record['final_accuracy']:.4f}, target at "
                          f"{record['time_to_target_s']}", flush=True)
    finally:
        switch.stop()
    print(f"pytorch_bench: {runs_file} (record it: /usr/bin/python3 scripts/evidence.py "
          f"record-pytorch {runs_file})")


if __name__ == "__main__":
    main()
