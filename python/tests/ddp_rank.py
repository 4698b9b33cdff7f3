"""One rank of test_ddp.py's runs: a small CNN trained a few steps on seeded
random data, through DDP with gloo (--mode gloo), DDP with Serene's hook
(--mode hook) or serene.torch.DistributedOptimizer (--mode optimizer).
Started as Slurm/mpirun would (RANK, WORLD_SIZE, MASTER_ADDR/PORT) or by
torchrun. Writes every step's gradients (DDP's, after the allreduce) and
parameters to OUT/rank<R>.pt.
"""

import argparse
import os
import signal
import time

import torch
import torch.distributed as dist

import serene.torch as st


def make_model(seed):
    torch.manual_seed(seed)  # a different initial model per rank: the wrappers must unify them
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 10))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(16, 1, 8, 8, generator=g), torch.randint(0, 10, (16,), generator=g)


def flat(tensors):
    return torch.cat([t.detach().reshape(-1).float() for t in tensors])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["gloo", "hook", "optimizer"], required=True)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--out", required=True)
    p.add_argument("--die-at", type=int, default=0, help="rank --die-rank kills itself (SIGKILL) "
                   "before this step")
    p.add_argument("--die-rank", type=int, default=1)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--autocast", action="store_true",
                   help="forward pass under torch.autocast('cpu', bfloat16)")
    p.add_argument("--slow-rank", type=int, default=-1,
                   help="this rank sleeps 0.3 s before each backward pass")
    args = p.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    model = make_model(seed=rank + 1)
    if args.dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    record = dict(grads=[], params=[], comm_s=0.0)
    if args.mode in ("gloo", "hook"):
        dist.init_process_group("gloo")
        model = torch.nn.parallel.DistributedDataParallel(model)
        if args.mode == "hook":
            state = st.HookState(model)
            model.register_comm_hook(state, st.allreduce_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        opt = st.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    record["params"].append(flat(model.parameters()))
    for step in range(1, args.steps + 1):
        if args.die_at == step and rank == args.die_rank:
            os.kill(os.getpid(), signal.SIGKILL)
        x, y = batch(rank, step)
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast):
            logits = model(x.to(next(model.parameters()).dtype))
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
        if rank == args.slow_rank:
            time.sleep(0.3)
        loss.backward()
        record["grads"].append(flat(p.grad for p in model.parameters()))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        scheduler.step()
        record["params"].append(flat(model.parameters()))
    record["lr"] = opt.param_groups[0]["lr"]
    record["state_dict_keys"] = sorted(opt.state_dict().keys())
    torch.save(record, os.path.join(args.out, f"rank{rank}.pt"))
    print(f"rank {rank}: done {args.steps} steps", flush=True)


if __name__ == "__main__":
    main()
