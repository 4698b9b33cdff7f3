"""A small ResNet on Fashion-MNIST: what ddp_resnet.py and optimizer_resnet.py share.

The model (a stem and three residual stages of 8, 16 and 32 channels, about
20,000 parameters), this rank's shard of the training set (train_fashion_mnist's
loader: Debian's dataset-fashion-mnist or $SERENE_DATA_DIR), the evaluation,
and RunLog, which records what docs/python.md's comparison reports: step
time, communication time per step, accuracy over time, time to target.
"""

import json
import time

import torch
import torch.nn.functional as F

from train_fashion_mnist import load, shard_batches


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.shortcut = torch.nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


def resnet():
    """28x28 -> 8 channels; stages of 8 (28x28), 16 (14x14), 32 (7x7); pool; 10 classes."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        BasicBlock(8, 8, 1), BasicBlock(8, 16, 2), BasicBlock(16, 32, 2),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))


def images(split, limit=None):
    x, y = load(split)
    if limit:
        x, y = x[:limit], y[:limit]
    return x.reshape(-1, 1, 28, 28), y


def train_step(model, opt, x, y):
    """One step of both examples: loss, backward, gradients clipped to 5, the
    optimizer's step."""
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()


def evaluate(model, x, y):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        correct = sum((model(x[i:i + 500]).argmax(1) == y[i:i + 500]).sum().item()
                      for i in range(0, len(x), 500))
    model.train(was_training)
    return correct / len(x)


def add_common_flags(p):
    p.add_argument("--steps", type=int, default=600, help="steps per rank (default 600)")
    p.add_argument("--batch", type=int, default=32, help="images per rank and step (default 32)")
    p.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (default 0.05)")
    p.add_argument("--seed", type=int, default=1, help="model and data seed (default 1)")
    p.add_argument("--eval-every", type=int, default=50, help="rank 0 evaluates every N steps")
    p.add_argument("--eval-images", type=int, default=2000,
                   help="test images rank 0 evaluates on (default 2000; 0 = all 10,000)")
    p.add_argument("--target-accuracy", type=float, default=0.0,
                   help="stop once rank 0 measures this test accuracy (default: off)")
    p.add_argument("--metrics", default="", help="rank 0 writes its run as JSON here")


class RunLog:
    """Rank 0's record of a run: step times, communication time, accuracy over time."""

    def __init__(self, mode, rank, world, args):
        self.rank, self.args = rank, args
        self.record = dict(mode=mode, world_size=world, batch=args.batch, lr=args.lr,
                           seed=args.seed, step_s=[], comm_step_s=[], evals=[],
                           time_to_target_s=None)
        self.start = time.monotonic()
        self._comm_total = 0.0

    def step(self, seconds, comm_total=None):
        """One step took `seconds`; `comm_total`: the communication time so far."""
        self.record["step_s"].append(seconds)
        if comm_total is not None:
            self.record["comm_step_s"].append(comm_total - self._comm_total)
            self._comm_total = comm_total

    def evaluated(self, step, accuracy):
        elapsed = time.monotonic() - self.start
        self.record["evals"].append(dict(step=step, time_s=elapsed, accuracy=accuracy))
        print(f"[rank 0] step {step} t={elapsed:.1f}s accuracy={accuracy:.4f}", flush=True)
        reached = bool(self.args.target_accuracy) and accuracy >= self.args.target_accuracy
        if reached and self.record["time_to_target_s"] is None:
            self.record["time_to_target_s"] = elapsed
        return reached

    def finish(self, comm_s, **extra):
        steps = len(self.record["step_s"])
        self.record.update(extra, steps=steps, total_s=time.monotonic() - self.start,
                           comm_s=comm_s, comm_s_per_step=comm_s / max(steps, 1),
                           final_accuracy=self.record["evals"][-1]["accuracy"]
                           if self.record["evals"] else None)
        print(json.dumps({k: v for k, v in self.record.items() if k not in ("step_s", "evals")}),
              flush=True)
        if self.args.metrics:
            with open(self.args.metrics, "w") as f:
                json.dump(self.record, f, indent=1)


__all__ = ["resnet", "images", "evaluate", "shard_batches", "add_common_flags", "RunLog"]
