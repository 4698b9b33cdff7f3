"""examples/train_fashion_mnist.py for a few steps through the launcher: real
Fashion-MNIST, real torch, a real switch; it must learn."""

import json
import subprocess
import sys

from conftest import SOURCE_DIR


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
