"""Serene for Python: one rank of an in-network aggregation job.

The switch holds the model; a rank pulls it, computes an update, pushes the
update and clocks through the switch's barrier (docs/python.md):

    import numpy, serene
    with serene.Client.from_env() as client:      # RANK, WORLD_SIZE, SERENE_SWITCH, ...
        info = client.join()
        model = numpy.zeros(info.elements, numpy.float32)
        client.initialize(model)                   # rank 0 seeds, all get the same model
        for step in range(100):
            client.pull(model)
            client.push(update)                    # e.g. -lr / N * gradient
            if client.clock().finished:
                break

serene.torch wraps a torch.nn.Module so a training step is one call;
`python3 -m serene.launch` starts a switch and N ranks of a script.
"""

from ._serene import (  # noqa: F401  (the public API)
    AlreadyExistsError,
    Client,
    ClientStats,
    ClockResult,
    DeadlineExceededError,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    IoError,
    JobInfo,
    NotFoundError,
    ResourceExhaustedError,
    Straggler,
    UnauthenticatedError,
    UnavailableError,
)

__all__ = [
    "AlreadyExistsError",
    "Client",
    "ClientStats",
    "ClockResult",
    "DeadlineExceededError",
    "Error",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "IoError",
    "JobInfo",
    "NotFoundError",
    "ResourceExhaustedError",
    "Straggler",
    "UnauthenticatedError",
    "UnavailableError",
]
