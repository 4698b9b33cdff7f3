"""serene.torch: a torch.nn.Module trained through a Serene switch.

    import serene, serene.torch
    worker = serene.torch.Worker(model, serene.Client.from_env(), lr=0.04)
    worker.start()                              # join, seed (rank 0) and pull the model
    while not worker.finished:
        x, y = next(batches)
        def loss_fn():
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            return loss
        step = worker.step(loss_fn)             # pull, loss_fn, push, clock
    worker.leave()

The module's parameters live in one flat float32 buffer (`worker.flat`), and
their gradients in another (`worker.flat_grad`): every parameter's `.data` and
`.grad` are views of them, so a pull writes straight into the parameters and
a push reads the gradients without gathering them.

A step pushes `-lr / N * grad` (N = the job's ranks), so the switch's model
moves by the mean gradient times lr, as serene-train's SGD. With `optimizer`
(any torch optimizer over the module's parameters) it pushes the change the
optimizer's step made to the pulled parameters, divided by N instead.

Straggler patterns (`straggler="slow_worker:0.15:0.5:2"`) and the metrics
(`worker.metrics()`) are serene-train's: the sleep follows the computation,
before the push, and the same totals are kept (docs/training.md).

For scripts written for DistributedDataParallel or Horovod, with the job
made from torchrun's (Slurm's, mpirun's) environment: DistributedOptimizer
(serene/optimizer.py) and the DDP communication hook allreduce_hook with its
HookState (serene/ddp_hook.py).
"""

import json
import time
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from ._serene import Client, ClockResult, JobInfo, Straggler
from .ddp_hook import HookState, allreduce_hook
from .optimizer import DistributedOptimizer

__all__ = ["Worker", "StepResult", "flat_size", "DistributedOptimizer", "HookState",
           "allreduce_hook"]


def flat_size(module: torch.nn.Module) -> int:
    """The element count of a job holding `module`'s parameters."""
    return sum(p.numel() for p in module.parameters())


@dataclass
class StepResult:
    """One training step: its loss, what the switch said, and its times (s)."""

    loss: Optional[float]
    clock: ClockResult
    pull_s: float
    compute_s: float
    sleep_s: float
    push_s: float

    @property
    def finished(self) -> bool:
        return self.clock.finished


class Worker:
    """One rank training `module` through a Serene switch (see the module doc)."""

    def __init__(
        self,
        module: torch.nn.Module,
        client: Client,
        lr: float = 0.04,
        optimizer: Optional[torch.optim.Optimizer] = None,
        straggler="none",
        seed: int = 1,
    ):
        if lr <= 0 and optimizer is None:
            raise ValueError(f"serene.torch.Worker: lr must be > 0, got {lr}")
        params = list(module.parameters())
        if not params:
            raise ValueError("serene.torch.Worker: the module has no parameters")
        for p in params:
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise TypeError(
                    "serene.torch.Worker: every parameter must be a float32 CPU tensor, got "
                    f"{p.dtype} on {p.device} (module.float().cpu())"
                )
        self.module = module
        self.client = client
        self.lr = lr
        self.optimizer = optimizer
        if isinstance(straggler, str):
            straggler = Straggler(straggler, seed=seed, rank=client.rank)
        self.straggler = straggler
        self._params = params
        n = sum(p.numel() for p in params)
        self.flat = torch.zeros(n, dtype=torch.float32)
        self.flat_grad = torch.zeros(n, dtype=torch.float32)
        self._update = torch.zeros(n, dtype=torch.float32)
        self._before = torch.zeros(n, dtype=torch.float32) if optimizer is not None else None
        self._segments = []
        offset = 0
        with torch.no_grad():
            for p in params:
                k = p.numel()
                self.flat[offset : offset + k].copy_(p.reshape(-1))
                self._segments.append((p, offset, k))
                offset += k
        self._bind_views()
        self.info: Optional[JobInfo] = None
        self.finished = False
        self.iterations = 0
        self.records = []
        self._totals = dict(
            pull_s=0.0, compute_s=0.0, push_s=0.0, barrier_wait_s=0.0, straggler_sleep_s=0.0
        )
        self._slowed = 0
        self._run_start = None

    # The parameters and their gradients are views of flat and flat_grad. A
    # user may replace a .grad (zero_grad(set_to_none=True)) or a .data; the
    # views are made again before each step, so neither breaks the wrapper.
    def _bind_views(self):
        for p, offset, k in self._segments:
            data_view = self.flat[offset : offset + k].view_as(p)
            if p.data.data_ptr() != data_view.data_ptr():
                p.data = data_view
            grad_view = self.flat_grad[offset : offset + k].view_as(p)
            if p.grad is None or p.grad.data_ptr() != grad_view.data_ptr():
                p.grad = grad_view

    def _gather_grads(self):
        # A gradient autograd put elsewhere (a replaced .grad) is copied in.
        for p, offset, k in self._segments:
            segment = self.flat_grad[offset : offset + k]
            if p.grad is None:
                segment.zero_()
            elif p.grad.data_ptr() != segment.data_ptr():
                segment.copy_(p.grad.reshape(-1))

    @property
    def world_size(self) -> int:
        return self.info.workers if self.info is not None else self.client.world_size

    def start(self) -> JobInfo:
        """Joins (unless the client did), checks the sizes, and brings every rank
        to one model: rank 0 seeds the switch with the module's parameters."""
        self.info = self.client.info if self.client.joined else self.client.join()
        if self.info.elements != self.flat.numel():
            raise ValueError(
                f"serene.torch.Worker: the job holds {self.info.elements} elements but the "
                f"module has {self.flat.numel()} parameters; create the job with "
                f"elements={self.flat.numel()}"
            )
        self.client.initialize(self.flat)
        self._run_start = time.monotonic()
        return self.info

    def step(self, loss_fn: Callable[[], Optional[torch.Tensor]]) -> StepResult:
        """One iteration: pull the model into the parameters, run `loss_fn`
        (forward and backward; returns the loss or None), sleep as the
        straggler pattern says, push the update and clock."""
        if self.info is None:
            raise RuntimeError("serene.torch.Worker: call start() before step()")
        if self.finished:
            raise RuntimeError("serene.torch.Worker: the job has finished; stop training")
        iteration_start = time.monotonic()
        self._bind_views()
        t = time.monotonic()
        self.client.pull(self.flat)
        pull_s = time.monotonic() - t

        t = time.monotonic()
        self.flat_grad.zero_()
        loss = loss_fn()
        self._gather_grads()
        n = self.world_size
        if self.optimizer is None:
            torch.mul(self.flat_grad, -self.lr / n, out=self._update)
        else:
            self._before.copy_(self.flat)
            self.optimizer.step()
            torch.sub(self.flat, self._before, out=self._update)
            self._update.div_(n)
        compute_s = time.monotonic() - t

        sleep_s = 0.0
        if self.straggler is not None:
            delay = self.straggler.next_delay(compute_s)
            if delay > 0:
                t = time.monotonic()
                time.sleep(delay)
                sleep_s = time.monotonic() - t
                self._slowed += 1

        t = time.monotonic()
        self.client.push(self._update)
        released = self.client.clock()
        push_s = time.monotonic() - t

        self.iterations += 1
        self.finished = released.finished
        loss_value = float(loss.detach()) if isinstance(loss, torch.Tensor) else loss
        self._totals["pull_s"] += pull_s
        self._totals["compute_s"] += compute_s
        self._totals["push_s"] += push_s
        self._totals["barrier_wait_s"] += released.waited
        self._totals["straggler_sleep_s"] += sleep_s
        self.records.append(
            dict(
                step=self.iterations,
                start_s=iteration_start - self._run_start,
                pull_s=pull_s,
                compute_s=compute_s,
                sleep_s=sleep_s,
                push_s=push_s,
                loss=loss_value,
            )
        )
        return StepResult(loss_value, released, pull_s, compute_s, sleep_s, push_s)

    def leave(self, finish_job: bool = False):
        """Leaves the barrier (finish_job=True ends the job for every rank)."""
        if self.client.joined and not self.client.finished:
            self.client.leave(finish_job)

    def metrics(self) -> dict:
        """serene-train's totals for this rank so far (seconds)."""
        m = dict(self._totals)
        m["backend"] = "serene"
        m["rank"] = self.client.rank
        m["world_size"] = self.world_size
        m["parameters"] = self.flat.numel()
        m["learning_rate"] = self.lr
        m["straggler"] = self.straggler.pattern if self.straggler is not None else "none"
        m["iterations"] = self.iterations
        m["wait_s"] = m["pull_s"] + m["push_s"]
        m["slowed_iterations"] = self._slowed
        m["job_completion_s"] = (
            time.monotonic() - self._run_start if self._run_start is not None else 0.0
        )
        m["iterations_detail"] = list(self.records)
        return m

    def write_metrics(self, path: str):
        """Writes metrics() as JSON."""
        with open(path, "w") as f:
            json.dump(self.metrics(), f, indent=1)
