"""Data-parallel training of the reference MLP on Fashion-MNIST through Serene.

The Python twin of serene-train's MLP run (docs/python.md): 784-100-10,
SGD lr 0.04, batch 256 per rank, the training set split into one shard per
rank, rank 0 evaluating on the test set. Every rank runs this script; start
them with the launcher, which also starts a switch:

    PYTHONPATH=build/python python3 -m serene.launch --nproc 4 --elements 79510 \\
        examples/train_fashion_mnist.py --steps 1000

or set RANK, WORLD_SIZE and SERENE_SWITCH (SERENE_JOB, SERENE_KEY) yourself.
Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, or
$SERENE_DATA_DIR).
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch

import serene
import serene.torch

PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530  # of the training pixels (train/fashion_mnist.h)


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(split):
    root = os.environ.get("SERENE_DATA_DIR") or "/usr/share/datasets/fashion-mnist"
    prefix = "train" if split == "train" else "t10k"
    try:
        images = read_idx(f"{root}/{prefix}-images-idx3-ubyte.gz")
        labels = read_idx(f"{root}/{prefix}-labels-idx1-ubyte.gz")
    except FileNotFoundError as e:
        sys.exit(f"train_fashion_mnist: {e}; install the Debian package dataset-fashion-mnist "
                 "or set SERENE_DATA_DIR")
    x = (images.reshape(len(images), -1).astype(np.float32) / 255.0 - PIXEL_MEAN) / PIXEL_STD
    return torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))


def shard_batches(n_examples, rank, world, batch, seed):
    """This rank's slice of one seeded permutation, reshuffled every epoch;
    full batches only (the update always averages `batch` examples)."""
    shard = np.array_split(np.random.default_rng(seed).permutation(n_examples), world)[rank]
    rng = np.random.default_rng(seed + 1000 * (rank + 1))
    while True:
        order = rng.permutation(shard)
        for i in range(0, len(order) - batch + 1, batch):
            yield torch.from_numpy(order[i : i + batch])


def evaluate(model, x, y):
    with torch.no_grad():
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y).item()
        accuracy = (logits.argmax(1) == y).float().mean().item()
    return accuracy, loss


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000, help="iterations per rank (default 1000)")
    p.add_argument("--lr", type=float, default=0.04, help="learning rate (default 0.04)")
    p.add_argument("--batch", type=int, default=256, help="examples per rank and step (default 256)")
    p.add_argument("--seed", type=int, default=1, help="model, shard and straggler seed (default 1)")
    p.add_argument("--eval-every", type=int, default=100, help="rank 0 evaluates every N steps")
    p.add_argument("--target-accuracy", type=float, default=0.0,
                   help="stop every rank once rank 0 measures this test accuracy (default: off)")
    p.add_argument("--straggler", default="none",
                   help="serene-train's pattern, e.g. slow_worker:0.15:0.5:2 (default none)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank (default 1)")
    p.add_argument("--metrics", default="", help="write this rank's metrics as JSON to this file")
    args = p.parse_args()
    if args.steps <= 0 or args.batch <= 0 or args.eval_every <= 0 or args.lr <= 0:
        p.error("--steps, --batch, --eval-every and --lr must be positive")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(784, 100), torch.nn.ReLU(), torch.nn.Linear(100, 10))

    # The data first: the run clock starts at worker.start(), as serene-train's.
    x_train, y_train = load("train")
    x_test, y_test = load("test")
    client = serene.Client.from_env()
    worker = serene.torch.Worker(model, client, lr=args.lr, straggler=args.straggler,
                                 seed=args.seed)
    info = worker.start()
    rank, world = client.rank, info.workers
    evaluating = rank == 0
    batches = shard_batches(len(x_train), rank, world, args.batch, args.seed)
    start = time.monotonic()
    timeline = []
    accuracy = float("nan")

    for step in range(1, args.steps + 1):
        idx = next(batches)
        xb, yb = x_train[idx], y_train[idx]

        def loss_fn():
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            return loss

        result = worker.step(loss_fn)
        if result.finished:
            break
        if evaluating and (step % args.eval_every == 0 or step == args.steps):
            client.pull(worker.flat)  # the switch's model after this clock
            accuracy, test_loss = evaluate(model, x_test, y_test)
            elapsed = time.monotonic() - start
            timeline.append(dict(step=step, time_s=elapsed, accuracy=accuracy, test_loss=test_loss))
            print(f"[rank 0/{world}] step {step} t={elapsed:.1f}s acc={accuracy:.4f} "
                  f"test_loss={test_loss:.4f} train_loss={result.loss:.4f}", flush=True)
            if args.target_accuracy and accuracy >= args.target_accuracy:
                print(f"[rank 0/{world}] target accuracy {args.target_accuracy} reached at step "
                      f"{step}", flush=True)
                worker.leave(finish_job=True)
                break
    else:
        worker.leave()

    m = worker.metrics()
    if evaluating:
        print(json.dumps(dict(rank=rank, world_size=world, steps=worker.iterations,
                              final_accuracy=accuracy, job_completion_s=m["job_completion_s"],
                              compute_s=m["compute_s"], wait_s=m["wait_s"])), flush=True)
    if args.metrics:
        m["timeline"] = timeline
        with open(args.metrics, "w") as f:
            json.dump(m, f, indent=1)


if __name__ == "__main__":
    main()
