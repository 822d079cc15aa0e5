"""DCF, DCF+bias and DCF_PHD share their relaxed start within a process: a fit from a
reused start is bit for bit the fit that draws its own, and nothing else is reused."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib.methods import dcf, dcf_bias, dcf_phd, discrete

SMALL = {"tune": False, "max_iterations": 6, "init_max_iterations": 4, "alpha": 0.1, "beta": 0.1}
FITS = {"dcf": dcf.fit_point, "dcf-bias": dcf_bias.fit_point, "dcf-phd": dcf_phd.fit_point}


def _fit(name, split, bits=16, seed=0, **over):
    cfg = {**dcf.DCF.defaults(split.dataset.name, bits), **SMALL, **over}
    if name == "dcf":
        return dcf.fit_point(split, bits, seed, cfg, [bits])
    return FITS[name](split, bits, seed, cfg)


def _same(a, b):
    """The two fits' codes, surrogates, offsets and logs (seconds aside) are identical."""
    (ma, ia), (mb, ib) = a, b
    for x, y in [(ma.B, mb.B), (ma.D, mb.D), *zip(ma.X, mb.X), *zip(ma.Y, mb.Y)]:
        assert np.array_equal(x, y)
    assert (ma.offset is None) == (mb.offset is None)
    if ma.offset is not None:
        assert np.array_equal(ma.offset, mb.offset)
    drop = [{k: v for k, v in r.items() if k != "seconds"} for r in ma.log]
    assert drop == [{k: v for k, v in r.items() if k != "seconds"} for r in mb.log]
    assert [r["change"] for r in ma.init_log] == [r["change"] for r in mb.init_log]
    assert ia["iterations"] == ib["iterations"]


@pytest.mark.parametrize("first, then", [("dcf", "dcf-bias"), ("dcf", "dcf-phd"),
                                         ("dcf-phd", "dcf"), ("dcf-bias", "dcf-phd")])
def test_a_reused_start_gives_the_fit_that_draws_its_own(synthetic_split, first, then):
    discrete.forget_starts()
    alone = _fit(then, synthetic_split)
    assert alone[1]["init_reused"] is False
    discrete.forget_starts()
    lead = _fit(first, synthetic_split)
    assert lead[1]["init_reused"] is False
    after = _fit(then, synthetic_split)
    assert after[1]["init_reused"] is True
    _same(alone, after)
    again = _fit(first, synthetic_split)  # the leader's own fit changed no stored start
    assert again[1]["init_reused"] is True
    _same(lead, again)
    discrete.forget_starts()


def test_a_fit_from_a_reused_start_draws_the_same_random_numbers(synthetic_split, monkeypatch):
    """With surrogates that draw from the generator every round, the fit's last X shows
    whether a reused start hands on the generator's state (no rank deficiency needed)."""
    real = discrete.balanced_decorrelated

    def drawing(W, rng):
        return real(W, rng) + rng.standard_normal()

    monkeypatch.setattr(discrete, "balanced_decorrelated", drawing)
    discrete.forget_starts()
    alone = _fit("dcf-phd", synthetic_split)
    discrete.forget_starts()
    _fit("dcf", synthetic_split)
    after = _fit("dcf-phd", synthetic_split)
    assert after[1]["init_reused"]
    _same(alone, after)
    discrete.forget_starts()


def test_a_reused_fit_reports_the_cost_of_the_fit_it_equals(synthetic_split):
    discrete.forget_starts()
    lead = _fit("dcf", synthetic_split)
    after = _fit("dcf-bias", synthetic_split)
    drawn = lead[0].init_seconds
    assert after[0].init_seconds == drawn and drawn[0] > 0
    assert after[1]["train_seconds"] >= drawn[0] and after[1]["train_cpu_seconds"] >= drawn[1]
    discrete.forget_starts()


@pytest.mark.parametrize("change", [{"alpha": 0.01}, {"beta": 0.01}, {"seed": 1}, {"bits": 8},
                                    {"init_max_iterations": 3}, {"init_x_factor": 2.0},
                                    {"init_tol": 1e-3}, {"init_count_weighted": False}])
def test_a_start_is_reused_only_for_the_same_inputs(synthetic_split, change):
    discrete.forget_starts()
    _fit("dcf", synthetic_split)
    over = dict(change)
    bits, seed = over.pop("bits", 16), over.pop("seed", 0)
    model, info = _fit("dcf-bias", synthetic_split, bits=bits, seed=seed, **over)
    assert info["init_reused"] is False, f"reused across {change}"
    discrete.forget_starts()


def test_a_start_is_reused_only_for_the_same_ratings(synthetic_split):
    discrete.forget_starts()
    g = discrete.RatingGraph.from_ratings(synthetic_split.train, synthetic_split.dataset.n_users,
                                          synthetic_split.dataset.n_items)
    target = discrete.scale_ratings(g.rating, *synthetic_split.dataset.rating_scale, 16)
    kw = {"alpha": 0.1, "beta": 0.1, "max_iterations": 2, "init_max_iterations": 2}
    assert not discrete.fit_blocks(g, target, [16], **kw).init_reused
    assert discrete.fit_blocks(g, target, [16], **kw).init_reused
    moved = target.copy()
    moved[0] = -moved[0] if moved[0] else 1.0
    assert not discrete.fit_blocks(g, moved, [16], **kw).init_reused
    assert not discrete.fit_blocks(g, target, [16], init="random", **kw).init_reused
    assert not discrete.fit_blocks(g, target * 0.5, [16], **kw).init_reused  # another scale
    Wu = np.full((g.n_users, 1), 2.0)
    assert not discrete.fit_blocks(g, target, [16], Wu=Wu, **kw).init_reused
    assert discrete.fit_blocks(g, target, [16], Wu=Wu, **kw).init_reused
    discrete.forget_starts()


def test_stored_starts_stay_within_their_byte_budget(synthetic_split, monkeypatch):
    discrete.forget_starts()
    _fit("dcf", synthetic_split)
    one = discrete.STARTS.nbytes
    monkeypatch.setattr(discrete.STARTS, "max_bytes", 2 * one)
    for a in (0.01, 0.02, 0.03):
        _fit("dcf", synthetic_split, alpha=a, beta=a)
    assert len(discrete.STARTS) == 2, "older starts did not leave"
    assert _fit("dcf", synthetic_split, alpha=0.03, beta=0.03)[1]["init_reused"]
    assert not _fit("dcf", synthetic_split)[1]["init_reused"], "the oldest start stayed"
    monkeypatch.setattr(discrete.STARTS, "max_bytes", one // 2)
    _fit("dcf", synthetic_split, alpha=0.5, beta=0.5)
    assert not discrete.STARTS, "a start over the whole budget was kept"
    discrete.forget_starts()


# ------------------------------------------------------------------ where the grid runs them

def test_cells_that_share_work_are_one_task_and_the_costliest_task_leads():
    from phdlib.experiments import Cell, runner
    from phdlib.experiments.cells import freeze

    small = freeze(SMALL)
    cells = [Cell("ml-100k", m, b, s, small if m.startswith("dcf") else ())
             for m in ("dcf", "dcf-bias", "dcf-phd", "mf", "mf-mean", "mf-median", "mf-als", "vh")
             for b in (8, 16) for s in (0, 1)]
    cells.append(Cell("ml-100k", "dcf-bias", 8, 0, freeze({**SMALL, "alpha": 0.5, "beta": 0.5})))
    tasks = runner.tasks(cells)
    flat = [c for t in tasks for c in t]
    assert len(flat) == len(cells) and set(flat) == set(cells), "a cell was lost or repeated"
    by_cell = {c: tuple(t) for t in tasks for c in t}
    for b in (8, 16):
        for s in (0, 1):
            dcfs = by_cell[Cell("ml-100k", "dcf", b, s, small)]
            assert [c.method for c in dcfs] == ["dcf", "dcf-bias", "dcf-phd"], dcfs
            assert {c.bits for c in dcfs} == {b} and {c.seed for c in dcfs} == {s}
            mfs = by_cell[Cell("ml-100k", "mf", b, s)]
            assert [c.method for c in mfs] == ["mf", "mf-mean", "mf-median"], mfs
            assert len(by_cell[Cell("ml-100k", "mf-als", b, s)]) == 1
            assert len(by_cell[Cell("ml-100k", "vh", b, s)]) == 1
    other = Cell("ml-100k", "dcf-bias", 8, 0, freeze({**SMALL, "alpha": 0.5, "beta": 0.5}))
    assert by_cell[other] == (other,), "a start with another alpha is not shared"
    costs = [sum(runner._cost(c) for c in t) for t in tasks]
    assert costs == sorted(costs, reverse=True)


def test_a_grid_runs_the_family_in_one_worker_and_its_later_cells_reuse_the_start(tmp_path):
    from phdlib import results
    from phdlib.experiments import Cell, run_grid
    from phdlib.experiments.cells import freeze

    cells = [Cell("ml-100k", m, 8, 0, freeze(SMALL)) for m in ("dcf", "dcf-bias", "dcf-phd")]
    cells.append(Cell("ml-100k", "item-mean", 8, 0))
    rep = run_grid(cells, jobs=2, root=tmp_path, progress=False, name="share")
    assert list(rep["status"]) == ["ran"] * 4
    reused = {}
    for c, path in zip(rep["cell"], rep["path"]):
        if c.method.startswith("dcf"):
            reused[c.method] = results.load(path).metrics["init_reused"]
    assert sorted(reused.values()) == [False, True, True], reused


def test_a_task_drops_the_work_its_cells_shared(tmp_path, monkeypatch):
    from phdlib.experiments import Cell, runner
    from phdlib.experiments.cells import freeze
    from phdlib.methods import mf_methods

    discrete.forget_starts()
    cells = [Cell("ml-100k", m, 8, 0, freeze(SMALL)) for m in ("dcf", "dcf-bias")]
    seen = []
    real = runner._run_cell

    def spy(cell, *a, **k):
        out = real(cell, *a, **k)
        seen.append((cell.method, len(discrete.STARTS)))
        return out

    monkeypatch.setattr(runner, "_run_cell", spy)
    outs = runner._run_task(cells, str(tmp_path), None)
    assert [o["ok"] for o in outs] == [True, True], [o["error"] for o in outs]
    assert seen == [("dcf", 1), ("dcf-bias", 1)], "the start was not kept between the cells"
    assert not discrete.STARTS, "the task left its starts behind"
    mf_methods._PATHS["x"] = 1
    runner._run_task([Cell("ml-100k", "mf", 8, 0, (("tune", False), ("epochs", 1)))],
                     str(tmp_path), None)
    assert not mf_methods._PATHS


def test_the_store_of_starts_is_safe_under_threads():
    import threading

    from phdlib.methods.reuse import Reuse

    class Value:
        def __init__(self, n):
            self.a = np.full(n, n)
            self.nbytes = self.a.nbytes

        def copy(self):
            return Value(len(self.a))

    store, errors = Reuse("test values", 10 * 8 * 64), []

    def work(i):
        try:
            for j in range(300):
                n = 1 + (i * 7 + j) % 23
                v, _ = store.get(str(n), lambda: Value(n))
                assert len(v.a) == n and (v.a == n).all()
                if j % 50 == i:
                    store.forget()
                assert store.nbytes <= store.max_bytes
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
