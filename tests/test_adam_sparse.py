"""The exact sparse Adam update equals the dense pass bit for bit; lazy Adam is what it says.

The float32 facts the sparse update rests on (an update below half the spacing
of float32 numbers at a parameter cannot move it, the later updates of an
untouched row only shrink, a moment at zero stays there) are checked here by
brute force, not assumed: rows in awkward states (zero, subnormal and
power-of-two parameters, subnormal, negative and zero moments) replayed over
long gaps against the dense pass repeated step by step, with and without
flushing subnormals; then whole training runs at the ML-1M and Amazon shapes.
"""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from phdlib.bench.train import SHAPES  # noqa: E402
from phdlib.kernels import adam as A  # noqa: E402
from phdlib.kernels import adam_replay as R  # noqa: E402
from phdlib.kernels import fpenv  # noqa: E402
from phdlib.methods import vh, vh_step  # noqa: E402


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


def _awkward(rows, d, seed):
    """Parameters and moments in the states a long run reaches, and some it should not."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(-2, 2, (rows, d)).astype(np.float32)
    m = (rng.standard_normal((rows, d)) * 10.0 ** rng.uniform(-6, -1, (rows, 1))).astype(
        np.float32)
    v = (m.astype(np.float64) ** 2 * 10.0 ** rng.uniform(0, 3, (rows, d))).astype(np.float32)
    p[0, :8] = [0.0, -0.0, 1.0, -0.5, 2.0 ** -20, 1e-40, -1e-42, 3.0]   # zero, powers, subnormal
    m[1, :4] = [1e-40, -1e-41, 0.0, -0.0]                                # subnormal and zero moments
    v[1, :4] = [1e-39, 0.0, 0.0, 1e-30]
    m[2], v[2] = 0.0, 0.0                                                # a row never touched
    p[3] *= np.float32(1e-30)                                            # tiny parameters
    return p, m, v


def _dense_steps(p, m, v, consts, first, last):
    slot = np.full(p.shape[0], -1, np.int64)
    none, grad = np.empty(0, np.int64), np.empty((0, p.shape[1]), np.float32)
    for t in range(first, last + 1):
        A.adam_rows(p, m, v, none, grad, slot, grad, *consts.dense(t))


@pytest.mark.parametrize("flush", [True, False])
@pytest.mark.parametrize("start,gap", [(1, 40), (5, 1200), (900, 3000),
                                       (17_000, 1500)])   # across sqrt(1 - beta2^t) -> 1
def test_replay_of_untouched_rows_equals_the_dense_pass_bit_for_bit(flush, start, gap):
    c = vh_step._Constants(0.005).upto(start + gap)
    p0, m0, v0 = _awkward(24, 40, seed=start)
    want = [x.copy() for x in (p0, m0, v0)]
    got = [x.copy() for x in (p0, m0, v0)]
    last = np.full(24, start - 1, np.int64)
    with fpenv.flush_denormals(flush):
        _dense_steps(*want, c, start, start + gap - 1)
        full, missed = R.catch_up(*got, last, np.arange(24, dtype=np.int64), start + gap - 1,
                                  *c.tables())
    assert missed == 24 * gap and (last == start + gap - 1).all()
    for a, b in zip(want, got):
        assert np.array_equal(_bits(a), _bits(b))
    if gap >= 1200:
        assert full < missed / 3   # the shortcut is taken: most steps moved the moments only
    assert (want[0] != p0).any()   # the parameters do move


def test_an_update_below_the_settle_bound_never_moves_its_parameter():
    """The float32 fact the replay's settle test rests on, by brute force: for any
    parameter ``x``, an update ``u`` with ``|u| < fl(|x| 2^-25)`` leaves ``x + u == x``
    (powers of two, toward zero and away, the top of a binade, the smallest normals,
    subnormals); and the bound is not loose by more than a factor of four (updates of
    ``2^-23 |x|`` move every normal ``x``)."""
    rng = np.random.default_rng(0)
    e = rng.integers(-149, 127, 200_000)
    x = np.ldexp(rng.uniform(1.0, 2.0, e.size), e).astype(np.float32)
    powers = np.ldexp(np.float32(1.0), np.arange(-149, 128)).astype(np.float32)
    tops = np.nextafter(powers[1:], np.float32(0.0))   # the top of each binade below
    x = np.concatenate([x, powers, tops, np.float32([1e-40, 1e-45, 1.1754944e-38])])
    x = np.concatenate([x, -x])
    bound = np.abs(x) * np.float32(2.0 ** -25)
    u = np.nextafter(bound, np.float32(0.0))          # the largest update below it
    for sign in (np.float32(1.0), np.float32(-1.0)):
        assert np.array_equal((x + sign * u).view(np.uint32), x.view(np.uint32))
    normal = np.abs(x) >= np.float32(2.0 ** -100)
    moved = x[normal] + np.abs(x[normal]) * np.float32(2.0 ** -23)
    assert (moved != x[normal]).all()


@pytest.mark.parametrize("flush", [True, False])
@pytest.mark.parametrize("width", [64, 37])
def test_replay_gathering_the_moving_elements_equals_the_dense_pass(flush, width):
    """Elements of one row settling far apart: the replay gathers the moving ones (in
    blocks of ``LANES``) and goes on with them alone, some still moving at the end of
    the gap and some parameters subnormal or zero; the dense pass's numbers still."""
    rng = np.random.default_rng(width)
    rows, start, gap = 12, 900, 300
    c = vh_step._Constants(0.001).upto(start + gap)
    p = rng.uniform(-2, 2, (rows, width)).astype(np.float32)
    p[:, 1::7] *= np.float32(1e-6)       # slower to settle
    m = (rng.standard_normal((rows, width)) * 1e-3).astype(np.float32)
    v = (m.astype(np.float64) ** 2 * 10.0 ** rng.uniform(0, 2, (rows, width))).astype(
        np.float32)
    p[:, ::4], m[:, ::4] = 0.0, 0.0      # zero: never settle, so every row moves to the end
    p[0, 1], m[0, 2], v[0, 2] = 1e-40, -1e-41, 1e-39   # subnormal parameter and moments
    want = [x.copy() for x in (p, m, v)]
    got = [x.copy() for x in (p, m, v)]
    last = np.full(rows, start - 1, np.int64)
    with fpenv.flush_denormals(flush):
        _dense_steps(*want, c, start, start + gap - 1)
        full, missed = R.catch_up(*got, last, np.arange(rows, dtype=np.int64),
                                  start + gap - 1, *c.tables())
    for a, b in zip(want, got):
        assert np.array_equal(_bits(a), _bits(b))
    assert missed == rows * gap
    # every row has elements moving to the end: whole-row steps would be rows * gap
    assert full < 0.7 * rows * gap
    assert (want[0] != p).any()


def test_catch_up_all_on_two_threads_equals_one_thread_and_the_dense_pass():
    c = vh_step._Constants(0.001).upto(800)
    p0, m0, v0 = _awkward(200, 16, seed=4)
    last0 = np.random.default_rng(0).integers(0, 700, 200)
    one = [x.copy() for x in (p0, m0, v0)] + [last0.copy()]
    two = [x.copy() for x in (p0, m0, v0)] + [last0.copy()]
    with fpenv.flush_denormals(True):
        R.catch_up_all(*one, 750, *c.tables(), 1, True)
        R.catch_up_all(*two, 750, *c.tables(), 2, True)
        ref = [x.copy() for x in (p0, m0, v0)]
        for r in range(200):   # each row's own gap, through the dense pass on that row alone
            rows = [x[r:r + 1] for x in ref]
            _dense_steps(*rows, c, int(last0[r]) + 1, 750)
            for x, y in zip(ref, rows):
                x[r:r + 1] = y
    for a, b, want in zip(one[:3], two[:3], ref):
        assert np.array_equal(_bits(a), _bits(b)) and np.array_equal(_bits(a), _bits(want))
    assert (one[3] == 750).all() and (two[3] == 750).all()


def _synthetic(shape, seed=0):
    n_users, n_items, n = shape
    rng = np.random.default_rng(seed)
    return NS(user=rng.integers(0, n_users, n), item=rng.integers(0, n_items, n),
              rating=rng.integers(1, 6, n).astype(np.float32))


def _trained(shape, bits, cfg, rows, steps, every, threads=1, flush=None):
    tr = vh._Trainer(_synthetic(shape), shape[0], shape[1], bits, (1, 5), cfg, 0, "fused",
                     threads, flush=flush, rows=rows)
    for _ in range(steps // every):
        tr.steps(every)   # each call ends with a sync, as each validation does
    return tr


def _same_state(a, b):
    for x, y in zip(a.step.params, b.step.params):
        for u, w in ((x.p, y.p), (x.m, y.m), (x.v, y.v)):
            assert np.array_equal(_bits(u), _bits(w))


@pytest.mark.parametrize("shape,bits,steps,every", [
    ("ml-1m", 64, 1500, 750),
    ("amazon", 32, 1000, 500),
])
@pytest.mark.parametrize("distance", ["hamming", "phd"])
def test_exact_sparse_step_equals_the_dense_step_bit_for_bit(shape, bits, steps, every, distance):
    cfg = vh.default_config(distance)
    cfg["train_sampling"] = "stochastic"
    dense = _trained(SHAPES[shape], bits, cfg, "all", steps, every)
    sparse = _trained(SHAPES[shape], bits, cfg, "touched", steps, every)
    assert sparse.step.modes == ["touched", "touched"] and dense.step.modes == ["all", "all"]
    _same_state(dense, sparse)
    assert sum(s.missed for s in sparse.step.params) > 0
    assert sparse.loss_acc == dense.loss_acc


@pytest.mark.parametrize("flush,threads", [(True, 2), (False, 1)])
def test_exact_sparse_step_with_a_user_bias_threads_and_subnormals(flush, threads):
    # few ratings for many items: items go untouched for hundreds of steps
    cfg = vh.default_config("hamming", user_bias=True)
    cfg.update(batch_size=16, lr=0.005, train_sampling="stochastic")
    shape = (100, 3000, 6000)
    dense = _trained(shape, 16, cfg, "all", 3000, 1000, threads, flush)
    sparse = _trained(shape, 16, cfg, "touched", 3000, 1000, threads, flush)
    assert len(sparse.step.params) == 3
    _same_state(dense, sparse)


def test_exact_sparse_step_equals_the_dense_step_late_in_training():
    """From Adam step 20,000 on, the bias correction sqrt(1 - beta2^t) is 1 in float32 and
    the replay leaves out its division: still the dense pass's numbers."""
    cfg = vh.default_config("phd")
    cfg.update(batch_size=32, train_sampling="stochastic")
    shape = (200, 4000, 20_000)
    out = []
    for rows in ("all", "touched"):
        tr = vh._Trainer(_synthetic(shape), shape[0], shape[1], 16, (1, 5), cfg, 0, "fused",
                         rows=rows)
        tr.step.start_at(20_000)
        assert tr.step.consts.bc2s[20_000] == np.float32(1.0)
        for _ in range(3):
            tr.steps(400)
        out.append(tr)
    _same_state(*out)
    assert out[1].step.params[1].full > 0


def test_auto_updates_a_table_sparsely_from_sparse_gap_rows_per_rating():
    cfg = vh.default_config("phd")
    B = cfg["batch_size"]
    big = vh_step.SPARSE_GAP * B
    tr = vh._Trainer(_synthetic((big, big - 1, 1000)), big, big - 1, 8, (1, 5), cfg, 0)
    assert tr.step.modes == ["touched", "all"]
    with pytest.raises(ValueError, match="rows must be one of"):
        vh._Trainer(_synthetic((10, 10, 100)), 10, 10, 8, (1, 5), cfg, 0, rows="some")


def test_lazy_adam_steps_the_touched_rows_only():
    cfg = vh.default_config("phd")
    cfg.update(adam="lazy", batch_size=8)
    shape = (50, 40, 400)
    tr = vh._Trainer(_synthetic(shape), shape[0], shape[1], 8, (1, 5), cfg, 0)
    assert tr.step.modes == ["lazy", "lazy"]
    before = [s.p.copy() for s in tr.step.params]
    tr.steps(1)
    users = set(tr.step.users.tolist())
    for st, b, rows in zip(tr.step.params, before, (users, set(tr.step.items.tolist()))):
        moved = set(np.flatnonzero((st.p != b).any(axis=1)).tolist())
        assert moved and moved <= rows                       # only the batch's rows change
        untouched = np.setdiff1d(np.arange(st.p.shape[0]), sorted(rows))
        assert (st.m[untouched] == 0).all() and (st.v[untouched] == 0).all()
    # later steps never decay a row the batch does not touch
    tr.steps(20)
    st = tr.step.params[1]
    m0 = st.m.copy()
    tr.steps(1)
    untouched = np.setdiff1d(np.arange(st.p.shape[0]), tr.step.items)
    assert np.array_equal(st.m[untouched], m0[untouched])
    bad = dict(cfg, adam="sparse")
    with pytest.raises(ValueError, match="config 'adam' must be one of"):
        vh._Trainer(_synthetic(shape), shape[0], shape[1], 8, (1, 5), bad, 0)
    with pytest.raises(ValueError, match="lazy Adam runs in the fused step"):
        vh._Trainer(_synthetic(shape), shape[0], shape[1], 8, (1, 5), cfg, 0, "autograd")


def test_moment_tables_start_on_cache_lines():
    """The replay's 64-byte vectors of a row must not straddle two cache lines."""
    for shape in [(1, 1), (1000, 64), (3, 37)]:
        z = A.zeros_aligned(shape)
        assert z.shape == shape and z.dtype == np.float32 and not z.any()
        assert z.ctypes.data % A.ALIGN == 0 and z.flags.c_contiguous
    cfg = vh.default_config("phd", user_bias=True)
    tr = vh._Trainer(_synthetic((50, 70, 500)), 50, 70, 64, (1, 5), cfg, 0, "fused")
    for st in tr.step.params:
        for x in (st.p, st.m, st.v):
            assert x.ctypes.data % A.ALIGN == 0


def test_zeros_aligned_refuses_what_np_zeros_refuses_and_zero_width_counts():
    with pytest.raises(ValueError, match="must not be negative"):
        A.zeros_aligned((-1, 3))
    with pytest.raises(ValueError, match="plain numbers"):
        A.zeros_aligned((2,), object)
    assert A.zeros_aligned(5).shape == (5,)
    c = vh_step._Constants(0.001).upto(60)
    p = np.zeros((3, 0), np.float32)
    full, missed = R.catch_up(p, p.copy(), p.copy(), np.zeros(3, np.int64),
                              np.arange(3, dtype=np.int64), 50, *c.tables())
    assert full == 0 and missed == 150
