"""DistributedDataParallel training of a small ResNet on Fashion-MNIST; the
gradients are summed by gloo's allreduce or by a Serene switch (--comm).

    torchrun --nproc_per_node 4 --redirects 2 --tee 2 examples/ddp_resnet.py
    SERENE_SWITCH=127.0.0.1:7000 torchrun --nproc_per_node 4 --redirects 2 --tee 2 \\
        examples/ddp_resnet.py --comm serene

An ordinary DDP script: the one Serene line is the register_comm_hook call.
With --comm serene rank 0 creates a SYNC job on the switch through its
runtime API (SERENE_CONTROL, default the switch's port + 1; SERENE_TOKEN_FILE)
and deletes it at the end (docs/python.md). --comm gloo-timed is gloo's
allreduce waited for bucket by bucket, so that its time can be measured
(DDP's default overlaps it with the backward pass). `--redirects 2 --tee 2`:
Debian 12's torchrun needs them (docs/python.md).
"""

import argparse
import time

import torch
import torch.distributed as dist

from fashion_resnet import (RunLog, add_common_flags, evaluate, images, resnet, shard_batches,
                            train_step)


class TimedAllreduce:
    """State of timed_allreduce_hook: gloo's allreduce time, summed."""

    def __init__(self):
        self.comm_s = 0.0


def timed_allreduce_hook(
    state: TimedAllreduce, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """DDP's default allreduce_hook (the mean over the ranks), waited for at once."""
    tensor = bucket.buffer().div_(dist.get_world_size())
    started = time.perf_counter()
    dist.all_reduce(tensor)
    state.comm_s += time.perf_counter() - started
    future = torch.futures.Future()
    future.set_result(tensor)
    return future


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--comm", choices=["gloo", "gloo-timed", "serene"], default="gloo",
                   help="who sums the gradients (default gloo: DDP's own allreduce)")
    add_common_flags(p)
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    x_train, y_train = images("train")
    x_test, y_test = images("test", args.eval_images)
    batches = shard_batches(len(x_train), rank, world, args.batch, args.seed)
    torch.manual_seed(args.seed)
    model = torch.nn.parallel.DistributedDataParallel(resnet())
    comm_s = None
    if args.comm == "serene":
        import serene.torch

        state = serene.torch.HookState(model)
        model.register_comm_hook(state, serene.torch.allreduce_hook)
        comm_s = lambda: state.comm_s  # noqa: E731
    elif args.comm == "gloo-timed":
        timer = TimedAllreduce()
        model.register_comm_hook(timer, timed_allreduce_hook)
        comm_s = lambda: timer.comm_s  # noqa: E731

    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    log = RunLog(f"ddp-{args.comm}", rank, world, args)
    for step in range(1, args.steps + 1):
        started = time.monotonic()
        idx = next(batches)
        train_step(model, opt, x_train[idx], y_train[idx])
        schedule.step()
        log.step(time.monotonic() - started, comm_s() if comm_s else None)
        if step % args.eval_every == 0 or step == args.steps:
            stop = torch.zeros(1)
            if rank == 0:
                stop[0] = log.evaluated(step, evaluate(model.module, x_test, y_test))
            dist.broadcast(stop, 0)  # every rank stops at the same step
            if stop.item():
                break
    if rank == 0:
        log.finish(comm_s() if comm_s else float("nan"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
