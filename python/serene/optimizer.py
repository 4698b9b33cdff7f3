"""serene.torch.DistributedOptimizer: any torch optimizer, stepping through the switch.

    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt = serene.torch.DistributedOptimizer(opt)       # joins; rank 0's weights for all
    for x, y in batches:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()                                      # update through the switch, pull
        if opt.finished:
            break

The switch holds the model. At construction every rank joins the job and
rank 0's parameters become every rank's (Horovod's broadcast_parameters).
`step()` runs the wrapped optimizer's own step on this rank's gradients,
pushes the change it made to the parameters divided by N, clocks through the
job's barrier (SYNC, SSP, ASYNC, quorum, or a policy script changing it) and
pulls the model into the parameters. Under SYNC every rank pulls the same
model after every step, bit for bit.

The object returned is an instance of the wrapped optimizer's class (a
subclass made for it) sharing its param_groups and state, so LR schedulers,
state_dict()/load_state_dict() and everything else that takes an optimizer
keep working. Parameters of any floating dtype and device are converted to
float32 at the boundary (the switch holds float32 in fixed point) and back.
"""

import time

import torch

from ._serene import DeadlineExceededError
from .job import Job

__all__ = ["DistributedOptimizer"]


class _Distributed:
    """The methods a DistributedOptimizer adds over the wrapped optimizer's class."""

    def _serene_start(self, job):
        self._serene_params = [p for group in self.param_groups for p in group["params"]]
        for p in self._serene_params:
            if not p.is_floating_point():
                raise TypeError(f"serene.torch.DistributedOptimizer: parameter of dtype {p.dtype}; "
                                "the switch holds floating-point models only")
        n = sum(p.numel() for p in self._serene_params)
        if job is None:
            job = Job.from_env(n, name="optimizer")
        self.serene_job = job
        self.serene_client = job.client
        info = self.serene_client.info
        if info.elements != n:
            raise ValueError(f"serene.torch.DistributedOptimizer: the job holds {info.elements} "
                             f"elements but the optimizer's parameters have {n}; create the job "
                             f"with elements={n}")
        self._serene_n = info.workers
        self._serene_model = torch.zeros(n, dtype=torch.float32)
        self._serene_before = torch.zeros(n, dtype=torch.float32)
        self._serene_update = torch.zeros(n, dtype=torch.float32)
        self._serene_gather(self._serene_model)
        self.serene_client.initialize(self._serene_model)  # rank 0 seeds; all get its model
        self._serene_scatter(self._serene_model)
        self.finished = False
        self.last_clock = None
        self.comm_s = 0.0
        self.steps = 0

    def _serene_gather(self, out):
        offset = 0
        with torch.no_grad():
            for p in self._serene_params:
                k = p.numel()
                out[offset : offset + k].copy_(p.detach().reshape(-1))
                offset += k

    def _serene_scatter(self, flat):
        offset = 0
        with torch.no_grad():
            for p in self._serene_params:
                k = p.numel()
                p.copy_(flat[offset : offset + k].view_as(p))
                offset += k

    def step(self, closure=None):
        """The wrapped optimizer's step on this rank's gradients; its change to
        the parameters, divided by N, goes to the switch; then the model is
        pulled into the parameters. Returns the closure's loss, if any."""
        if self.finished:
            raise RuntimeError("serene.torch.DistributedOptimizer: the job has finished; "
                               "stop training")
        self._serene_gather(self._serene_before)
        loss = super().step(closure)
        self._serene_gather(self._serene_update)
        self._serene_update.sub_(self._serene_before).div_(self._serene_n)
        started = time.perf_counter()
        try:
            result = self.serene_client.exchange(self._serene_update, self._serene_model)
        except DeadlineExceededError as e:
            raise DeadlineExceededError(
                f"serene.torch.DistributedOptimizer: rank {self.serene_client.rank}, step "
                f"{self.steps + 1}: {e}. Another rank has probably stopped (see its log), or "
                "the job was deleted") from None
        self.comm_s += time.perf_counter() - started
        self.steps += 1
        self.last_clock = result
        self.finished = result.finished
        if not result.finished:
            self._serene_scatter(self._serene_model)
        return loss

    def close(self):
        """Leaves (and, on rank 0 of a job it created, deletes) the job; also at exit."""
        self.serene_job.close()


def DistributedOptimizer(optimizer: torch.optim.Optimizer, job: Job = None):
    """Wraps `optimizer` (see the module doc). `job`: a serene.job.Job; by
    default one is joined, or created by rank 0, from the environment
    (serene.job.Job.from_env: SERENE_SWITCH, SERENE_POLICY, torchrun's store)."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"serene.torch.DistributedOptimizer: expected a torch.optim.Optimizer, "
                        f"got {type(optimizer).__name__}")
    if isinstance(optimizer, _Distributed):
        raise ValueError("serene.torch.DistributedOptimizer: the optimizer is already wrapped")
    base = type(optimizer)
    cls = type(f"Distributed{base.__name__}", (_Distributed, base), {})
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update(optimizer.__dict__)  # the same param_groups, state and defaults
    wrapped._serene_start(job)
    return wrapped
