"""serene.torch.allreduce_hook: DistributedDataParallel's gradients summed by the switch.

    model = torch.nn.parallel.DistributedDataParallel(net)
    model.register_comm_hook(serene.torch.HookState(model), serene.torch.allreduce_hook)

One clock of a SYNC job per training step. The job's table holds every
gradient bucket of the model one after another (bucket 0 first); each rank
INCs its buckets' gradients divided by N, in fixed point, and after the
barrier READs the table: the mean gradient, the same int32 values on every
rank, so every rank applies bit for bit the same update. The table is not
left to accumulate: rank 0's INC also subtracts what the table held (the
previous step's sum, which it read), so after each clock the table holds
exactly that clock's sum and never saturates over a run.

Only SYNC gives DDP's semantics (every rank, the same mean of every rank's
gradient of this step): under SSP or ASYNC a rank may read before slower
ranks added theirs, or after faster ones added their next step's, and the
replicas would drift apart. HookState refuses to create a job with another
policy, and the hook raises at the first step released before every rank
finished it (a job whose policy was changed, or a quorum).
"""

import os
import time

import torch
import torch.distributed

from ._serene import DeadlineExceededError
from .job import Job, JobError

__all__ = ["HookState", "allreduce_hook"]


class HookState:
    """The state of serene.torch.allreduce_hook for one DDP model: its job and buffers.

    `model` is the DistributedDataParallel module (or the module it wraps):
    the job holds one value per element of its parameters that require a
    gradient. `job` is a serene.job.Job; by default one is made from the
    environment (serene.job.Job.from_env) with eviction off, since a step
    without a rank's gradient is not an allreduce: if a rank dies, the others
    fail at their client deadline (SERENE_DEADLINE_S) with a message saying so.
    """

    def __init__(self, model: torch.nn.Module, job: Job = None, *, policy=None, name="ddp"):
        self.elements = sum(p.numel() for p in model.parameters() if p.requires_grad)
        if self.elements == 0:
            raise ValueError("serene.torch.HookState: the model has no parameters to train")
        if job is None:
            chosen = policy or os.environ.get("SERENE_POLICY") or "sync"
            if chosen != "sync":
                raise JobError(
                    f"serene.torch.allreduce_hook needs a SYNC job, not '{chosen}': DDP applies "
                    "the same mean gradient on every rank, and only SYNC reads give it (under "
                    "SSP or ASYNC a rank reads a sum missing slower ranks' gradients or holding "
                    "faster ranks' next step, and the replicas drift apart). For SSP, ASYNC or "
                    "a policy script use serene.torch.DistributedOptimizer")
            job = Job.from_env(self.elements, policy="sync", evict_after="0", name=name)
        self.job = job
        self.client = job.client
        info = self.client.info
        if info.elements != self.elements:
            raise JobError(f"serene.torch.allreduce_hook: the job holds {info.elements} elements "
                           f"but the model's gradients have {self.elements}; create the job with "
                           f"elements={self.elements}")
        self.world_size = info.workers
        self.rank = self.client.rank
        self._scale = float(2 ** info.scale_log2)
        self._limit = 2**31 - 1
        self._update = torch.zeros(self.elements, dtype=torch.int32)
        self._sum = torch.zeros(self.elements, dtype=torch.int32)  # the table, as last read
        # Clock 0 seeds the table: zeros (rank 0's), so the first sum starts clean.
        self.client.initialize(torch.zeros(self.elements, dtype=torch.float32))
        self._sum.zero_()
        self._offset = 0
        self._pending = []
        self.steps = 0
        self.comm_s = 0.0  # time in the switch exchange, summed over steps

    def _fail(self, error):
        for _, _, _, future in self._pending:
            if not future.done():
                future.set_exception(error)
        self._pending = []
        self._offset = 0
        raise error

    def _add(self, bucket) -> torch.futures.Future[torch.Tensor]:
        tensor = bucket.buffer()
        future = torch.futures.Future()
        if bucket.index() == 0:
            self._offset, self._pending = 0, []
        offset, n = self._offset, tensor.numel()
        if offset + n > self.elements:
            self._fail(JobError(
                f"serene.torch.allreduce_hook: DDP's buckets hold more than the job's "
                f"{self.elements} elements; make the HookState from the model DDP wraps"))
        scaled = tensor.detach().to(torch.float64) * (self._scale / self.world_size)
        if not torch.isfinite(scaled).all():
            self._fail(FloatingPointError(
                f"serene.torch.allreduce_hook: bucket {bucket.index()} holds a NaN or infinite "
                f"gradient on rank {self.rank}; the switch sums fixed-point values only"))
        q = torch.round(scaled)
        if self.rank == 0:
            q -= self._sum[offset : offset + n]  # empties the table of the previous step's sum
        if q.abs().max() > self._limit:
            self._fail(OverflowError(
                f"serene.torch.allreduce_hook: a gradient / N in bucket {bucket.index()} is beyond "
                f"the job's fixed-point range (±{self._limit / self._scale:g}); create the job "
                f"with a smaller scale"))
        self._update[offset : offset + n].copy_(q)
        self._pending.append((tensor, offset, n, future))
        self._offset += n
        if bucket.is_last():
            self._exchange()
        return future

    def _exchange(self):
        if self._offset != self.elements:
            self._fail(JobError(
                f"serene.torch.allreduce_hook: DDP's buckets hold {self._offset} elements but "
                f"the job {self.elements}; make the HookState from the model DDP wraps"))
        started = time.perf_counter()
        try:
            result = self.client.exchange(self._update, self._sum)
        except DeadlineExceededError as e:
            self._fail(DeadlineExceededError(
                f"serene.torch.allreduce_hook: rank {self.rank}, step {self.steps + 1}: {e}. "
                "Another rank has probably stopped (see its log), or the job was deleted"))
        self.comm_s += time.perf_counter() - started
        self.steps += 1
        if result.finished:
            self._fail(JobError("serene.torch.allreduce_hook: the job was ended (finish); "
                                "stop training"))
        if result.rejoined or result.low != result.clock:
            self._fail(JobError(
                f"serene.torch.allreduce_hook: the switch released clock {result.clock} before "
                f"every rank finished it (slowest at {result.low}): the job's policy is not SYNC "
                f"(epoch {result.epoch}), or a rank was evicted; the hook needs SYNC and every "
                "rank"))
        mean = self._sum.to(torch.float64) / self._scale
        for tensor, offset, n, future in self._pending:
            tensor.copy_(mean[offset : offset + n].view_as(tensor))
            future.set_result(tensor)
        self._pending = []
        self._offset = 0

    def close(self):
        """Leaves (and, on rank 0 of a job it created, deletes) the job; also at exit."""
        self.job.close()


def allreduce_hook(
    state: HookState, bucket: torch.distributed.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: the bucket's mean over the ranks, summed by the switch."""
    return state._add(bucket)
