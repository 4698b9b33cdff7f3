"""examples/train_fashion_mnist.py for a few steps through the launcher, and
the ResNet examples (DDP with the hook, DistributedOptimizer) on two ranks
whose rank 0 creates the job: real Fashion-MNIST, real torch, a real switch;
they must learn."""

import json
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR, start_rank_processes


def test_example_trains_through_the_launcher(tmp_path):
    metrics = tmp_path / "rank0.json"
    r = subprocess.run(
        [sys.executable, "-m", "serene.launch", "--nproc", "2", "--elements", "79510",
         str(SOURCE_DIR / "examples" / "train_fashion_mnist.py"),
         "--steps", "60", "--eval-every", "30", "--metrics", str(metrics)],
        capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr + r.stdout
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 60 and summary["world_size"] == 2
    # Random guessing is 0.10; 60 SGD steps of the MLP reach well above 0.6.
    assert summary["final_accuracy"] > 0.6, r.stdout
    m = json.loads(metrics.read_text())
    assert [p["step"] for p in m["timeline"]] == [30, 60]
    assert m["timeline"][1]["accuracy"] >= m["timeline"][0]["accuracy"] - 0.05


@pytest.mark.parametrize("script,flags", [("ddp_resnet.py", ["--comm", "serene"]),
                                          ("optimizer_resnet.py", [])])
def test_resnet_examples_train_through_the_switch(control_switch, tmp_path, script, flags):
    # Two ranks started as Slurm would; rank 0 creates the job on the switch.
    metrics = tmp_path / "rank0.json"
    procs = start_rank_processes(
        2, [str(SOURCE_DIR / "examples" / script), *flags, "--steps", "40", "--eval-every", "20",
            "--eval-images", "1000", "--metrics", str(metrics)], control_switch["env"])
    for rank, p in enumerate(procs):
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, f"rank {rank}: {err[-3000:]}"
    m = json.loads(metrics.read_text())
    assert [e["step"] for e in m["evals"]] == [20, 40] and len(m["step_s"]) == 40
    assert len(m["comm_step_s"]) == 40 and m["comm_s"] > 0
    # Random guessing is 0.10; 40 steps of the ResNet reach above 0.3.
    assert m["final_accuracy"] > 0.3, m["evals"]
