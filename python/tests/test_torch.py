"""serene.torch.Worker against a real switch: parameters as views of one flat
buffer, the SGD update -lr/N * grad, the optimizer path, straggler hooks and
metrics."""


import numpy as np
import pytest
import torch

import serene
from conftest import run_ranks
import serene.torch as st

KEY = 0x5E7E
LR = 0.5


def make_module(seed):
    # Weights from a generator of its own: ranks build their modules in
    # threads at once, and torch's global generator is shared between them.
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
    return module


def linear_loss(module, weight):
    # d loss / d p = weight for every parameter: a known gradient.
    def loss_fn():
        loss = weight * sum(p.sum() for p in module.parameters())
        loss.backward()
        return loss

    return loss_fn


@pytest.mark.parametrize("use_optimizer", [False, True])
def test_steps_move_the_model_by_the_mean_update(start_switch, use_optimizer):
    workers = 2
    n = st.flat_size(make_module(0))
    address = start_switch(workers, n)
    steps = 3

    def rank_body(rank):
        module = make_module(seed=rank)  # different inits: rank 0's must win
        client = serene.Client(switch=address, key=KEY, rank=rank, deadline_s=20)
        opt = torch.optim.SGD(module.parameters(), lr=LR) if use_optimizer else None
        worker = st.Worker(module, client, lr=LR, optimizer=opt)
        worker.start()
        start = worker.flat.clone()
        # Every parameter is a view of the flat buffer.
        for p in module.parameters():
            assert p.data_ptr() >= worker.flat.data_ptr()
            assert p.data_ptr() < worker.flat.data_ptr() + 4 * worker.flat.numel()
        for _ in range(steps):
            result = worker.step(linear_loss(module, weight=float(rank + 1)))
            assert not result.finished and result.loss is not None
        client.pull(worker.flat)
        final = worker.flat.clone()
        worker.leave()
        return start, final, worker.metrics()

    results = run_ranks(workers, rank_body)
    start0 = results[0][0]
    expected_init = torch.cat([p.detach().reshape(-1) for p in make_module(0).parameters()])
    for start, final, metrics in results:
        torch.testing.assert_close(start, expected_init, atol=2**-20, rtol=0)
        # Each step adds -lr/N * (1 + 2) to every parameter.
        expected = start0 - steps * LR / workers * 3.0
        torch.testing.assert_close(final, expected, atol=1e-5, rtol=0)
        assert metrics["iterations"] == steps and len(metrics["iterations_detail"]) == steps
        assert metrics["wait_s"] == pytest.approx(metrics["pull_s"] + metrics["push_s"])


def test_zero_grad_set_to_none_and_replaced_data_still_work(start_switch):
    module = make_module(1)
    n = st.flat_size(module)
    address = start_switch(1, n)
    client = serene.Client(switch=address, key=KEY, rank=0, deadline_s=20)
    worker = st.Worker(module, client, lr=LR)
    worker.start()
    before = worker.flat.clone()
    module.zero_grad(set_to_none=True)
    first = next(module.parameters())
    first.data = first.data.clone()  # no longer a view of flat
    worker.step(linear_loss(module, weight=1.0))
    client.pull(worker.flat)
    torch.testing.assert_close(worker.flat, before - LR * 1.0, atol=1e-5, rtol=0)


def test_refusals(start_switch):
    module = make_module(2)
    address = start_switch(1, st.flat_size(module) + 1)
    client = serene.Client(switch=address, key=KEY, rank=0, deadline_s=20)
    worker = st.Worker(module, client, lr=LR)
    with pytest.raises(RuntimeError, match="start"):
        worker.step(lambda: None)
    with pytest.raises(ValueError, match=f"elements={st.flat_size(module)}"):
        worker.start()
    with pytest.raises(TypeError, match="float32"):
        st.Worker(make_module(0).double(), client)
    with pytest.raises(ValueError, match="lr"):
        st.Worker(make_module(0), client, lr=0)


def test_straggler_sleeps_and_is_counted(start_switch, tmp_path):
    module = make_module(3)
    address = start_switch(1, st.flat_size(module))
    client = serene.Client(switch=address, key=KEY, rank=0, deadline_s=20)
    worker = st.Worker(module, client, lr=LR, straggler="heterogeneous:2")
    worker.start()
    result = worker.step(linear_loss(module, weight=1.0))
    assert result.sleep_s >= result.compute_s * 0.9
    m = worker.metrics()
    assert m["slowed_iterations"] == 1 and m["straggler"].startswith("heterogeneous")
    worker.write_metrics(str(tmp_path / "m.json"))
    assert '"iterations": 1' in (tmp_path / "m.json").read_text()
    assert np.isfinite(m["barrier_wait_s"])
