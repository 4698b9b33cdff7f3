"""serene.Client against a real serene-switch: the protocol round trip with
exact sums, zero-copy buffers, errors, refused inputs and the GIL."""

import threading
import time

import numpy as np
import pytest
import torch

import serene
from conftest import run_ranks

KEY = 0x5E7E


def client_for(address, rank, **options):
    return serene.Client(switch=address, key=KEY, rank=rank, deadline_s=20, **options)


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_ranks_pull_push_clock_sums_exact(start_switch, workers):
    elements = 1000
    address = start_switch(workers, elements)
    initial = (np.arange(elements, dtype=np.float32) % 64) * 0.5
    iterations = 5

    def rank_body(rank):
        with client_for(address, rank) as c:
            info = c.join()
            assert info.workers == workers and info.elements == elements
            model = np.zeros(elements, np.float32) if rank else initial.copy()
            assert c.initialize(model) is model
            np.testing.assert_array_equal(model, initial)
            previous = None
            for it in range(iterations):
                assert c.pull(model) is model
                # Under SYNC every rank sees every update of the clocks before.
                expected = initial + it * sum(0.25 * (r + 1) for r in range(workers))
                np.testing.assert_array_equal(model, expected.astype(np.float32))
                c.push(np.full(elements, 0.25 * (rank + 1), np.float32))
                result = c.clock()
                assert previous is None or result.clock == previous + 1
                assert c.current_clock == result.clock + 1
                previous = result.clock
                assert not result.finished
            s = c.stats
            assert s.packets_sent > 0 and s.packets_received > 0
            assert s.pull_time > 0 and s.push_time > 0

    run_ranks(workers, rank_body)


def test_exchange_is_push_clock_pull_in_float_and_fixed_point(start_switch):
    workers, elements = 3, 700
    address = start_switch(workers, elements)

    def rank_body(rank):
        with client_for(address, rank) as c:
            info = c.join()
            model = np.zeros(elements, np.float32)
            c.initialize(model)
            np.testing.assert_array_equal(model, 0)
            step = sum(0.5 * (r + 1) for r in range(workers))
            for it in range(1, 4):
                result = c.exchange(np.full(elements, 0.5 * (rank + 1), np.float32), model)
                assert c.current_clock == result.clock + 1 == it + 1
                np.testing.assert_array_equal(model, np.float32(it * step))
            # int32, with the update and the result in one buffer.
            fixed = np.full(elements, rank + 1, np.int32)
            c.exchange(fixed, fixed)
            base = int(round(3 * step * 2.0**info.scale_log2))
            np.testing.assert_array_equal(fixed, base + sum(range(1, workers + 1)))
            with pytest.raises(TypeError, match="both be float32 or both int32"):
                c.exchange(np.zeros(elements, np.float32), fixed)

    run_ranks(workers, rank_body)


def test_pull_writes_in_place_numpy_torch_and_int32(start_switch):
    elements = 300
    address = start_switch(1, elements)
    with client_for(address, 0) as c:
        info = c.join()
        model = np.linspace(-1, 1, elements).astype(np.float32)
        c.initialize(model.copy())

        # numpy: the same array object holds the model afterwards.
        out = np.zeros(elements, np.float32)
        assert c.pull(out) is out
        np.testing.assert_allclose(out, model, atol=2.0**-info.scale_log2)

        # torch: a view into a bigger storage is written through (no copy).
        storage = torch.zeros(2 * elements)
        view = storage[elements:]
        c.pull(view)
        assert torch.all(storage[:elements] == 0)
        np.testing.assert_array_equal(storage[elements:].numpy(), out)

        # A 2-D shape of the right size is fine.
        c.pull(out.reshape(3, 100))

        # int32: the raw fixed-point values, value * 2^scale.
        fixed = np.zeros(elements, np.int32)
        c.pull(fixed)
        np.testing.assert_array_equal(fixed, np.round(out.astype(np.float64) * 2.0**info.scale_log2))

        # A parameter that requires grad is pulled into in place too.
        param = torch.nn.Parameter(torch.zeros(elements))
        c.pull(param)
        np.testing.assert_array_equal(param.detach().numpy(), out)

        # push takes read-only and int32 buffers.
        ro = np.zeros(elements, np.float32)
        ro.setflags(write=False)
        c.push(ro)
        # One update per rank per clock: a second push is refused, sending nothing.
        with pytest.raises(serene.FailedPreconditionError, match="already pushed"):
            c.push(np.zeros(elements, np.int32))
        c.clock()
        c.push(np.zeros(elements, np.int32))
        c.clock()


def test_refused_inputs_name_what_was_expected(start_switch):
    elements = 64
    address = start_switch(1, elements)
    with client_for(address, 0) as c:
        c.join()
        c.initialize(np.zeros(elements, np.float32))
        with pytest.raises(TypeError, match="float32 or int32"):
            c.pull(np.zeros(elements, np.float64))
        with pytest.raises(ValueError, match="expected 64 elements"):
            c.pull(np.zeros(elements + 1, np.float32))
        with pytest.raises(ValueError, match="read-only"):
            ro = np.zeros(elements, np.float32)
            ro.setflags(write=False)
            c.pull(ro)
        with pytest.raises(ValueError, match="C-contiguous"):
            c.pull(np.zeros(2 * elements, np.float32)[::2])
        with pytest.raises(ValueError, match="not contiguous"):
            c.pull(torch.zeros(2 * elements)[::2])
        with pytest.raises(TypeError, match="torch.float64"):
            c.push(torch.zeros(elements, dtype=torch.float64))
        with pytest.raises(TypeError, match="buffer protocol"):
            c.push([0.0] * elements)
        with pytest.raises(TypeError, match="float32"):
            c.initialize(np.zeros(elements, np.int32))
        # The C++ client's own refusal, unchanged: a value that does not fit.
        bad = np.zeros(elements, np.float32)
        bad[7] = np.nan
        with pytest.raises(serene.InvalidArgumentError) as e:
            c.push(bad)
        assert isinstance(e.value, ValueError) and isinstance(e.value, serene.Error)
        assert "7" in str(e.value)
        # Nothing was sent by the refused calls: the clock still completes.
        c.push(np.zeros(elements, np.float32))
        c.clock()
    with pytest.raises(TypeError, match="unknown option 'swtich'"):
        serene.Client(swtich="127.0.0.1:1")


def test_errors_carry_the_cpp_message(start_switch):
    address = start_switch(1, 16)
    c = client_for(address, 0)
    with pytest.raises(serene.FailedPreconditionError, match=r"Pull\(\) before Join\(\)"):
        c.pull(np.zeros(16, np.float32))
    with pytest.raises(serene.Error):
        client_for(address, 5).join()  # rank 5 of a 1-rank job
    wrong_key = serene.Client(switch=address, key=KEY + 1, rank=0, deadline_s=5)
    with pytest.raises(serene.Error, match="key"):
        wrong_key.join()
    with pytest.raises(serene.InvalidArgumentError, match="switch"):
        serene.Client(switch="not an address")


def test_silent_switch_is_a_deadline_error():
    # Nothing listens on this port: join retries, then fails with the deadline.
    c = serene.Client(switch="127.0.0.1:9", rank=0, deadline_s=0.5, timeout_ms=20)
    with pytest.raises(serene.DeadlineExceededError) as e:
        c.join()
    assert isinstance(e.value, TimeoutError)


def test_gil_is_released_while_clock_waits(start_switch):
    elements = 32
    address = start_switch(2, elements)
    zeros = np.zeros(elements, np.float32)
    c0, c1 = client_for(address, 0), client_for(address, 1)
    inits = [threading.Thread(target=lambda c=c: (c.join(), c.initialize(zeros.copy())))
             for c in (c0, c1)]
    for t in inits:
        t.start()
    for t in inits:
        t.join(timeout=30)
    c0.push(zeros)
    results = {}
    waiter = threading.Thread(target=lambda: results.setdefault("r0", c0.clock()))
    waiter.start()
    # While rank 0 waits for rank 1 at the barrier, Python code runs here.
    spins = 0
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        spins += 1
    assert waiter.is_alive(), "rank 0's clock returned before rank 1 clocked"
    assert spins > 10000
    # The same client from a second thread is refused, not corrupted: calls
    # and properties alike; repr says it is busy.
    with pytest.raises(serene.FailedPreconditionError, match="another thread"):
        c0.pull(np.zeros(elements, np.float32))
    with pytest.raises(serene.FailedPreconditionError, match="stats: this Client is in use"):
        c0.stats
    assert "busy" in repr(c0)
    c1.push(zeros)
    r1 = c1.clock()
    waiter.join(timeout=30)
    assert not waiter.is_alive()
    assert results["r0"].clock == r1.clock
    assert results["r0"].waited > 0.2


def test_info_stats_repr_and_leave(start_switch):
    address = start_switch(2, 8)
    c = client_for(address, 0)
    assert not c.joined
    info = c.join()
    assert c.joined and c.info.elements == 8 and "elements=8" in repr(info)
    assert c.rank == 0 and c.world_size == 2 and c.switch == address
    assert c.local_address.rsplit(":", 1)[1].isdigit()
    assert "joined=True" in repr(c)
    c.leave(finish_job=True)
    other = client_for(address, 1)
    other.join()
    assert other.info.workers == 2


def test_straggler_patterns_are_serene_trains():
    always = serene.Straggler("slow_worker:1:1:1", seed=3, rank=2)
    assert always.next_delay(0.01) == pytest.approx(0.01)
    assert always.delayed_iterations == 1 and always.pattern.startswith("slow_worker")
    assert serene.Straggler("none").next_delay(0.5) == 0
    assert serene.Straggler("heterogeneous:3").next_delay(0.1) == pytest.approx(0.2)
    a = serene.Straggler("slow_worker:0.5", seed=7, rank=1)
    b = serene.Straggler("slow_worker:0.5", seed=7, rank=1)
    assert [a.next_delay(0.01) for _ in range(50)] == [b.next_delay(0.01) for _ in range(50)]
    with pytest.raises(serene.InvalidArgumentError, match="slow_worker"):
        serene.Straggler("slow_wroker")
