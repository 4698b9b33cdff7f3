"""Horovod-style training of a small ResNet on Fashion-MNIST through a Serene
switch: serene.torch.DistributedOptimizer wraps the SGD optimizer.

    SERENE_SWITCH=127.0.0.1:7000 torchrun --nproc_per_node 4 --redirects 2 --tee 2 \\
        examples/optimizer_resnet.py
    SERENE_POLICY=ssp:4 ...                   (or policies/adaptive.lua: a controller runs it)

No process group: rank 0 creates the job through the switch's runtime API,
the key travels through torchrun's store, every rank starts from rank 0's
weights, and each opt.step() pushes this rank's update, clocks through the
job's barrier and pulls the model (docs/python.md). The LR schedule, the
gradient clipping and the evaluation are the script's own, unchanged.
"""

import argparse
import time

import torch

import serene.torch
from fashion_resnet import (RunLog, add_common_flags, evaluate, images, resnet, shard_batches,
                            train_step)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_flags(p)
    args = p.parse_args()
    torch.set_num_threads(1)
    x_train, y_train = images("train")  # the data first: the first step waits for no loader
    x_test, y_test = images("test", args.eval_images)
    torch.manual_seed(args.seed)
    model = resnet()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    opt = serene.torch.DistributedOptimizer(opt)
    rank, world = opt.serene_job.rank, opt.serene_job.world_size
    batches = shard_batches(len(x_train), rank, world, args.batch, args.seed)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    log = RunLog("optimizer", rank, world, args)
    for step in range(1, args.steps + 1):
        started = time.monotonic()
        idx = next(batches)
        train_step(model, opt, x_train[idx], y_train[idx])
        schedule.step()
        log.step(time.monotonic() - started, opt.comm_s)
        if opt.finished:  # rank 0 reached the target and ended the job
            break
        if rank == 0 and (step % args.eval_every == 0 or step == args.steps):
            if log.evaluated(step, evaluate(model, x_test, y_test)):
                opt.serene_client.leave(finish_job=True)
                break
    if rank == 0:
        log.finish(opt.comm_s, policy=opt.serene_job.policy)
    opt.close()


if __name__ == "__main__":
    main()
