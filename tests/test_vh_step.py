"""The fused VH training step equals the autograd step (parameters after 1,000 steps)."""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from phdlib.kernels import fpenv  # noqa: E402
from phdlib.kernels import adam as A  # noqa: E402
from phdlib.kernels import vh as K  # noqa: E402
from phdlib.methods import vh, vh_step  # noqa: E402


def _train(n_users, n_items, n, seed=0):
    rng = np.random.default_rng(seed)
    return NS(user=rng.integers(0, n_users, n), item=rng.integers(0, n_items, n),
              rating=rng.integers(1, 6, n).astype(np.float32))


def _params(kind, cfg, shape, bits, steps, seed=3):
    tr = vh._Trainer(_train(*shape), shape[0], shape[1], bits, (1, 5), cfg, seed, kind)
    assert tr.step.name == kind
    tr.steps(steps)
    return [p.detach().numpy().copy() for p in tr.model.parameters()], tr


CASES = [  # distance, train sampling, user bias, mask gradient, target map
    ("phd", "stochastic", False, True, "released"),
    ("hamming", "deterministic", False, True, "released"),
    ("hamming", "stochastic", True, True, "minmax"),
    ("phd", "deterministic", False, False, "minmax"),
]


@pytest.mark.parametrize("distance,sampling,bias,mask_grad,target_map", CASES)
def test_fused_step_equals_autograd_step_after_1000_iterations(distance, sampling, bias,
                                                               mask_grad, target_map):
    cfg = vh.default_config(distance, user_bias=bias)
    cfg.update(train_sampling=sampling, user_mask_grad=mask_grad, target_map=target_map,
               lr=0.005)
    # few users and items: most rows repeat within a batch and every row moves
    shape = (150, 90, 20_000)
    old, t_old = _params("autograd", cfg, shape, 32, 1000)
    new, t_new = _params("fused", cfg, shape, 32, 1000)
    assert len(old) == len(new) == (3 if bias else 2)
    moved = np.abs(old[0] - _params("autograd", cfg, shape, 32, 0)[0][0]).max()
    assert moved > 0.1  # the test trains for real
    for a, b in zip(old, new):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert t_old.loss_acc == pytest.approx(t_new.loss_acc, rel=1e-5)


def test_fused_step_equals_autograd_step_at_ml_1m_shape():
    cfg = vh.default_config("phd")
    old, _ = _params("autograd", cfg, (6040, 3260, 100_000), 64, 300)
    new, _ = _params("fused", cfg, (6040, 3260, 100_000), 64, 300)
    for a, b in zip(old, new):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_auto_step_is_fused_on_cpu_and_autograd_with_the_kl_term():
    cfg = vh.default_config("phd")
    assert vh._Trainer(_train(20, 10, 100), 20, 10, 8, (1, 5), cfg, 0).step.name == "fused"
    cfg["kl_weight"] = 0.1
    assert vh._Trainer(_train(20, 10, 100), 20, 10, 8, (1, 5), cfg, 0).step.name == "autograd"
    with pytest.raises(ValueError, match="KL"):
        vh._Trainer(_train(20, 10, 100), 20, 10, 8, (1, 5), cfg, 0, "fused")
    with pytest.raises(ValueError, match="step must be"):
        vh._Trainer(_train(20, 10, 100), 20, 10, 8, (1, 5), vh.default_config("phd"), 0, "jit")


def test_stream_draws_torch_rand_across_twists_and_hands_the_state_back():
    gen = torch.Generator().manual_seed(2**40 + 17)
    torch.empty(1000).uniform_(-1, 1, generator=gen)
    twin = torch.Generator().set_state(gen.get_state())
    stream = vh_step._Stream(gen)
    assert stream.key is not None
    out = torch.empty(7, 111)
    for _ in range(5):  # 3,885 numbers: several state transitions
        stream.rand(out)
        assert torch.equal(out, torch.rand((7, 111), generator=twin))
    stream.sync()
    assert torch.equal(torch.rand(2000, generator=gen), torch.rand(2000, generator=twin))


def test_stream_of_a_fresh_generator():
    gen, twin = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    out = np.empty(700, np.float32)
    s = vh_step._Stream(gen)
    K.mt_uniform24(s.key, s.pos, out)
    assert np.array_equal(out, torch.rand(700, generator=twin).numpy())


def test_accumulate_rows_sums_repeats_in_batch_order():
    rows = np.array([3, 1, 3, 3, 0])
    g = np.arange(10, dtype=np.float32).reshape(5, 2) + 0.5
    slot, acc = np.full(5, -1, np.int64), np.zeros((5, 2), np.float32)
    assert A.accumulate_rows(rows, g, slot, acc) == 3
    np.testing.assert_array_equal(acc[slot[3]], g[0] + g[2] + g[3])
    np.testing.assert_array_equal(acc[slot[1]], g[1])
    assert slot[2] == slot[4] == -1


def test_train_bench_rows_and_limits(monkeypatch):
    from phdlib.bench import train as TB

    monkeypatch.setitem(TB.SHAPES, "tiny", (300, 200, 5000))
    res = TB.run(shapes=("tiny",), bits=(16,), threads=1, repeats=2, iterations={"tiny": 20})
    df = res.table()
    assert len(df) == 10  # 2 methods x (autograd, dense, exact, auto, lazy) on 1 thread
    assert set(df["step"]) == set(TB.STEPS) and set(df["method"]) == {"vh", "vh-phd"}
    assert (df["ms_per_iteration"] > 0).all() and (df["bytes_per_step"] > 500 * 16 * 24).all()
    dense = df[df.step.isin(["autograd", "dense", "auto"])]  # tiny tables: auto is dense
    np.testing.assert_allclose(dense["limit_ms"],
                               np.maximum(dense["traffic_ms"], dense["arithmetic_ms"]))
    sparse = df[df.step.isin(["exact", "lazy"])]
    np.testing.assert_allclose(sparse["limit_ms"],
                               sparse["limit_traffic_ms"] + sparse["limit_arithmetic_ms"])
    exact = df[df.step == "exact"]
    assert (exact["full_rows_per_step"] > 0).all() and (exact["moment_rows_per_step"] >= 0).all()
    assert (df.loc[df.step == "lazy", "full_rows_per_step"] == 0).all()
    assert (df.loc[df.step == "auto", "dense_share"] == 1).all()
    assert (df.loc[df.step == "exact", "dense_share"] == 0).all()
    assert (df.loc[df.step == "autograd", "speedup"] == 1.0).all()
    assert (df.loc[df.step == "dense", "vs_dense"] == 1.0).all()
    assert (df["subnormal_ms"] > 0).all() and (df["flushed_ms"] > 0).all()
    assert (df["decay_ns_per_row"] > 0).all() and (df["arith_ns_per_row"] > 0).all()
    assert "over_limit" in TB.report(res) and res.to_json()["_run"]["batch_size"] == 400
    only = TB.run(shapes=("tiny",), bits=(8,), methods=("vh",), threads=1, repeats=1,
                  iterations={"tiny": 5}, steps=("exact",))
    assert list(only.table()["step"]) == ["dense", "exact"]
    with pytest.raises(ValueError, match="unknown step"):
        TB.run(shapes=("tiny",), steps=("sparse",))


def test_train_bench_cli_errors(capsys):
    from phdlib.cli import main

    assert main(["bench", "--train", "--threads", "999"]) == 2
    assert "phd: error: threads must be in" in capsys.readouterr().err


def _long_tailed(n_users=100, common=100, rare=300, n=20_000, seed=0):
    """Ratings where ``rare`` items have one rating each: with batches of 16 each
    is touched once an epoch (1,250 steps), so its Adam moments go subnormal."""
    rng = np.random.default_rng(seed)
    items = np.concatenate([rng.integers(0, common, n - rare), common + np.arange(rare)])
    return NS(user=rng.integers(0, n_users, n), item=items,
              rating=rng.integers(1, 6, n).astype(np.float32)), n_users, common + rare


def _moments(flush, threads=1, steps=3000, step="fused"):
    train, nu, ni = _long_tailed()
    cfg = vh.default_config("hamming")
    cfg.update(batch_size=16, lr=0.005, train_sampling="stochastic")
    tr = vh._Trainer(train, nu, ni, 16, (1, 5), cfg, 0, step, threads, flush=flush)
    tr.steps(steps)
    if step == "autograd":
        state = tr.step.opt.state
        return [(p.detach().numpy().copy(), state[p]["exp_avg"].numpy().copy(),
                 state[p]["exp_avg_sq"].numpy().copy()) for p in tr.model.parameters()]
    return [(s.p.copy(), s.m.copy(), s.v.copy()) for s in tr.step.params]


def _subnormal(a):
    return int(np.sum((a != 0) & (np.abs(a) < np.finfo(np.float32).tiny)))


@pytest.mark.skipif(not fpenv.SUPPORTED, reason="no flush-to-zero mode known for this CPU")
def test_flushing_subnormals_leaves_every_parameter_bit_for_bit():
    slow, fast = _moments(False), _moments(True)
    assert sum(_subnormal(m) for _, m, _ in slow) > 100  # the case does reach subnormals
    for (p0, m0, v0), (p1, m1, v1) in zip(slow, fast):
        assert _subnormal(m1) == _subnormal(v1) == 0
        assert np.array_equal(p0.view(np.uint32), p1.view(np.uint32))
        flushed = np.where(np.abs(m0) < np.finfo(np.float32).tiny, np.float32(0), m0)
        assert np.array_equal(flushed, m1) and np.array_equal(v0, v1)


@pytest.mark.skipif(not fpenv.SUPPORTED, reason="no flush-to-zero mode known for this CPU")
def test_flushing_reaches_the_adam_worker_threads_and_the_autograd_step():
    from phdlib.methods.vh_model import torch_threads

    one, two = _moments(True), _moments(True, threads=2)
    with torch_threads(1):  # as training runs it: PyTorch on the calling thread only
        ref = _moments(True, step="autograd")
    for (p1, m1, v1), (p2, m2, v2), (pr, mr, vr) in zip(one, two, ref):
        assert _subnormal(m2) == 0
        assert np.array_equal(p1, p2) and np.array_equal(m1, m2) and np.array_equal(v1, v2)
        assert _subnormal(mr) == 0
        np.testing.assert_allclose(pr, p1, rtol=1e-5, atol=1e-6)


def test_flush_denormals_is_scoped_to_the_block():
    x, h = np.float32(1e-38), np.float32(0.5)
    with fpenv.flush_denormals():
        inside = np.array([x]) * h
    after = np.array([x]) * h
    assert after[0] > 0
    assert inside[0] == (0 if fpenv.SUPPORTED else after[0])
    with fpenv.flush_denormals(False):
        assert (np.array([x]) * h)[0] == after[0]


@pytest.mark.skipif(not fpenv.SUPPORTED, reason="no flush-to-zero mode known for this CPU")
def test_a_pass_without_flushing_computes_subnormals_on_worker_threads_after_a_flushed_run():
    _moments(True, threads=2, steps=50)  # a flushed run on two threads first
    rows, d = 64, 8
    p = np.ones((rows, d), np.float32)
    m = np.full((rows, d), 1e-40, np.float32)
    v = np.full((rows, d), 1e-6, np.float32)
    consts = tuple(np.float32(x) for x in (0.1, 0.999, 0.001, 0.5, 1e-8, -1e-3))
    none, grad = np.empty(0, np.int64), np.empty((0, d), np.float32)
    A.adam_rows_parallel(p, m, v, none, grad, np.full(rows, -1, np.int64), grad, *consts, 2,
                         False)
    assert _subnormal(m) == rows * d  # every chunk computed them, none flushed
    A.adam_rows_parallel(p, m, v, none, grad, np.full(rows, -1, np.int64), grad, *consts, 2,
                         True)
    assert _subnormal(m) == 0
