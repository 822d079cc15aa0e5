"""The method contract end to end, and properties every registered method must have.

Two toy methods, defined here only, are added through the contract alone
(``methods.register``): ``item-noise`` (a seeded random score per item) and
``toy-phd`` (random codes ranked by PHD). Each goes through the shared paths
every real method takes: ``training.run`` (fit, evaluation, store, reuse),
tuning (``grid`` over one config key), re-scoring from the stored arrays, the
derived method lists and labels, and Table 1 (``phdlib.report``).

The last tests hold for every registered method: its properties, and that
the metrics recorded at training equal a re-scoring of its stored arrays.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from phdlib import codes as C
from phdlib import evaluation, experiments, methods, results
from phdlib.evaluation import metrics
from phdlib.experiments import training
from phdlib.methods import CodeModel, ItemScoreModel, Method

METRIC_COLUMNS = ("ndcg@5", "ndcg@10", "mrr")


class ItemNoise(Method):
    """Every user gets the same seeded random item order; ``draw`` picks another order."""

    name = "item-noise"
    label = "Item noise (toy)"
    description = "a seeded random score per item (test only)"
    ranks_by = "score"
    model = ItemScoreModel

    def __init__(self):
        self.fits = 0

    def defaults(self, dataset, bits):
        return {"draw": 0, "tune": False, "draw_grid": [0, 1, 2, 3], "ties": "expected", "impl": 1}

    def grid(self, config, bits):
        return [{"draw": d, "tune": False} for d in config["draw_grid"]] if config["tune"] else []

    def fit(self, split, bits, seed, config, progress=False):
        self.fits += 1
        rng = np.random.default_rng([seed, config["draw"]])
        return ItemScoreModel(bits, {"item_scores": rng.random(split.dataset.n_items)}, "score",
                              pd.DataFrame({"step": [0]}), {"n_users": split.dataset.n_users})


class ToyPHD(Method):
    """Random codes (one draw per ``draw``) ranked by the projected Hamming dissimilarity."""

    name = "toy-phd"
    label = "Toy PHD"
    description = "random codes ranked by PHD (test only)"
    ranks_by = "phd"
    learns_codes = True
    model = CodeModel

    def __init__(self):
        self.fits = 0

    def defaults(self, dataset, bits):
        return {"draw": 0, "tune": False, "draw_grid": [0, 1, 2], "ties": "expected",
                "discount": "paper", "impl": 1}

    def grid(self, config, bits):
        return [{"draw": d, "tune": False} for d in config["draw_grid"]] if config["tune"] else []

    def fit(self, split, bits, seed, config, progress=False):
        self.fits += 1
        rng = np.random.default_rng([seed, config["draw"], bits])
        ds = split.dataset
        uc = C.pack(rng.random((ds.n_users, bits)) < 0.5, "bool")
        ic = C.pack(rng.random((ds.n_items, bits)) < 0.5, "bool")
        return CodeModel(bits, {"user_codes": uc.words, "item_codes": ic.words}, "phd",
                         pd.DataFrame({"iteration": [1], "loss": [0.0]}),
                         {"iterations": 1, "stop_reason": "one draw"})


@pytest.fixture(params=[ItemNoise, ToyPHD], ids=["item-noise", "toy-phd"])
def toy(request):
    """A toy method registered for the test, unregistered afterwards."""
    m = methods.register(request.param())
    yield m
    methods.unregister(m.name)
    assert m.name not in methods.names()


def _close_per_user(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert a["user"].tolist() == b["user"].tolist()
    for c in METRIC_COLUMNS:
        np.testing.assert_allclose(a[c].to_numpy(), b[c].to_numpy(), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- a toy method end to end


def test_registry_serves_the_toy(toy):
    assert methods.get(toy.name) is toy
    assert methods.names()[-1] == toy.name
    assert toy.name in methods.names(ranks_by=toy.ranks_by)
    assert all(toy.name not in methods.names(ranks_by=r) for r in methods.RANKS if r != toy.ranks_by)
    assert (toy.name in methods.names(learns_codes=True)) is toy.learns_codes
    assert toy.name in methods.names(in_paper=False) and toy.name not in methods.names(in_paper=True)
    assert toy.name not in methods.hashing_baselines()
    assert methods.label(toy.name) == toy.label
    assert methods.resolve_config(toy.name, "synthetic", 32, {"draw": 2})["draw"] == 2
    with pytest.raises(KeyError, match="no config key"):
        methods.resolve_config(toy.name, "synthetic", 32, {"drawing": 2})


def test_register_refuses_what_is_not_a_new_method():
    class Bare(Method):
        name = "vh"

    with pytest.raises(ValueError, match="already registered"):
        methods.register(Bare())
    with pytest.raises(ValueError, match="empty"):
        methods.register(Method())
    with pytest.raises(TypeError, match="phdlib.methods.Method"):
        methods.register(object())
    Bare.name = "bare-test"
    methods.register(Bare())
    assert methods.label("bare-test") == ""  # registered, with its (empty) label
    methods.unregister("bare-test")
    with pytest.raises(methods.MethodNotAvailable):
        methods.get("bare-test")
    assert methods.label("bare-test") == "bare-test"  # unknown: the name itself
    methods.unregister("bare-test")  # a second time is harmless


def test_run_fits_evaluates_stores_and_reuses(toy, synthetic_split, tmp_path):
    sp = synthetic_split
    r = training.run(toy.name, sp, 32, 0, root=tmp_path, progress=False)
    assert toy.fits == 1 and r.path == tmp_path / sp.dataset.name / toy.name / r.key
    assert r.method == toy.name and r.bits == 32 and r.fingerprint == sp.fingerprint
    assert r.config == methods.resolve_config(toy.name, sp.dataset.name, 32)
    assert r.extra["label"] == toy.label and r.extra["ranks_by"] == toy.ranks_by
    assert set(r.arrays) == set(toy.model.needs) and r.grid is None
    for k in (*METRIC_COLUMNS, "users", "released:ndcg@10", "valid_ndcg@10"):
        assert 0 <= r.metrics[k] <= (1 if k != "users" else np.inf)
    # evaluated by the shared code, nothing else
    pu = evaluation.evaluate(toy.fit(sp, 32, 0, r.config), sp.test, ties="expected")
    _close_per_user(pu, r.per_user)
    toy.fits = 0
    again = training.run(toy.name, sp, 32, 0, root=tmp_path, progress=False)
    assert toy.fits == 0 and again.path == r.path and again.metrics == r.metrics
    pd.testing.assert_frame_equal(again.per_user, r.per_user)
    for k in r.arrays:
        np.testing.assert_array_equal(again.arrays[k], r.arrays[k])


def test_tuning_over_one_config_key(toy, synthetic_split, tmp_path):
    sp = synthetic_split
    r = training.run(toy.name, sp, 32, 0, {"tune": True}, root=tmp_path, progress=False)
    draws = toy.defaults(sp.dataset.name, 32)["draw_grid"]
    g = r.grid
    assert g["draw"].tolist() == draws and toy.fits == len(draws)
    assert {"train_seconds", "chosen", *(f"valid_{m}" for m in METRIC_COLUMNS),
            *(f"test_{m}" for m in METRIC_COLUMNS)} <= set(g.columns)
    assert "tune" not in g.columns
    best = int(np.argmax(g["valid_ndcg@10"].to_numpy()))  # chosen on validation, never on test
    assert g["chosen"].tolist() == [i == best for i in range(len(draws))]
    assert r.extra["chosen"] == {"draw": draws[best]}
    assert r.metrics["ndcg@10"] == g.loc[best, "test_ndcg@10"]
    assert r.metrics["valid_ndcg@10"] == g["valid_ndcg@10"].max()
    # every point is a stored run; the tuned run holds the chosen point's model
    cfg = methods.resolve_config(toy.name, sp.dataset.name, 32, {"tune": True})
    for i, d in enumerate(draws):
        p = results.find(toy.name, sp.dataset.name, 32, 0, {**cfg, "draw": d, "tune": False},
                         sp.fingerprint, root=tmp_path)
        assert p is not None and p.metrics["valid_ndcg@10"] == g.loc[i, "valid_ndcg@10"]
        if i == best:
            assert p.key == r.extra["chosen_key"]
            for k in p.arrays:
                np.testing.assert_array_equal(p.arrays[k], r.arrays[k])
    assert len(results.index(tmp_path)) == len(draws) + 1
    back = results.load(r.path)
    pd.testing.assert_frame_equal(back.grid, g)
    assert back.extra["chosen"] == r.extra["chosen"]


@pytest.mark.parametrize("tune", [False, True])
def test_rescoring_stored_arrays_gives_the_stored_metrics(toy, synthetic_split, tmp_path, tune):
    sp = synthetic_split
    r = training.run(toy.name, sp, 32, 0, {"tune": tune}, root=tmp_path, progress=False)
    model = training.fitted(results.load(r.path))
    assert isinstance(model, toy.model) and model.ranks_by == toy.ranks_by
    pu = evaluation.evaluate(model, sp.test, ties=r.config["ties"], discount=r.config.get("discount", "paper"))
    _close_per_user(pu, results.load(r.path).per_user)
    # the catalogue extension reads the same stored model
    cat = evaluation.evaluate_catalogue(model, sp)
    assert len(cat) == len(pu) and (cat["n_ranked"] >= cat["n_test"]).all()


def test_table1_reports_the_toy_as_an_addition(toy, synthetic_split, tmp_path):
    report = pytest.importorskip("phdlib.report")
    sp = synthetic_split
    runs = {experiments.Cell(sp.dataset.name, name, 32): training.run(name, sp, 32, 0, root=tmp_path,
                                                                      progress=False)
            for name in ("random", "item-mean", toy.name)}
    t = report.table1(runs, sp.dataset.name, 32)
    assert t.paper_methods == methods.names(in_paper=True)
    assert toy.name in t.additions and toy.name not in t.missing
    assert set(t.missing) >= set(methods.names(in_paper=True))
    for name in ("random", "item-mean", toy.name):
        cell = experiments.Cell(sp.dataset.name, name, 32)
        assert t.values.loc[name, ("ndcg@10", "ours")] == pytest.approx(runs[cell].metrics["ndcg@10"])
    shown = report.format_table1(t)
    assert methods.label(toy.name) in shown.index
    row = shown.loc[methods.label(toy.name)]
    ours = runs[experiments.Cell(sp.dataset.name, toy.name, 32)].metrics["ndcg@10"]
    assert row[(report.METRIC_LABELS["ndcg@10"], "ours")] == report.fmt_value(ours, np.nan)
    assert row[(report.METRIC_LABELS["ndcg@10"], "paper")] == "–"  # the paper has no such method
    # the lists can be given: the toy alone as an addition
    only = report.table1(runs, sp.dataset.name, 32, paper_methods=[], additions=[toy.name], hamming=[])
    assert only.values.index.tolist() == [toy.name] and only.missing == []
    assert report.format_table1(only).index[-1] == methods.label(toy.name)


# --------------------------------------------------------------------------- every registered method


def test_every_method_ranks_by_a_known_value_and_names_are_unique():
    names = methods.names()
    assert names == list(methods.REGISTRY) and len(set(names)) == len(names)
    for n in names:
        m = methods.get(n)
        assert m.name == n and m.label and m.description
        assert m.ranks_by in methods.RANKS, n
        assert issubclass(m.model, methods.Fitted) and m.model is not methods.Fitted, n
        assert methods.label(n) == m.label
    assert set(methods.names(ranks_by="phd")) == {"vh-phd", "dcf-phd", "vh-phd-lazy"}
    assert set(methods.names(ranks_by="phd", variant=False)) == {"vh-phd", "dcf-phd"}
    for n in methods.names(variant=True):   # a variant names a method of the catalogue
        assert methods.get(n).variant_of in methods.names(variant=False), n
        assert methods.get(n).ranks_by == methods.get(methods.get(n).variant_of).ranks_by
    assert sorted(n for r in methods.RANKS for n in methods.names(ranks_by=r)) == sorted(names)


def test_the_papers_methods_in_table1_order():
    assert methods.names(in_paper=True) == ["cccf", "dcf", "mf-mean", "mf-median", "vh", "vh-phd", "mf"]
    assert methods.hashing_baselines() == ["cccf", "dcf", "mf-mean", "mf-median", "vh"]
    assert methods.names(in_paper=False) == [n for n in methods.REGISTRY
                                             if n not in methods.names(in_paper=True)]


@pytest.mark.parametrize("dataset,bits", [("ml-1m", 32), ("ml-1m", 64), ("synthetic", 16)])
def test_every_methods_defaults_hold_ties_and_impl(dataset, bits):
    for n in methods.names():
        cfg = methods.get(n).defaults(dataset, bits)
        assert "ties" in cfg and "impl" in cfg, n
        assert cfg == methods.get(n).defaults(dataset, bits)  # a fresh dict, the same values
        if methods.get(n).grid(cfg, bits):  # a tunable method says so with ``tune``
            assert cfg.get("tune") is True, n
            assert methods.get(n).grid({**cfg, "tune": False}, bits) == [], n


#: Tiny configs of the registered methods (one fit in about a second or less).
_VH = {"tune": False, "max_iterations": 200, "min_iterations": 0, "eval_every": 100, "batch_size": 64,
       "device": "cpu"}
TINY = {
    "cccf": {"tune": False, "max_iterations": 3},
    "dcf": {"tune": False, "max_iterations": 3, "init_max_iterations": 3},
    "mf": {"tune": False, "epochs": 5},
    "mf-mean": {"tune": False, "epochs": 5},
    "mf-median": {"tune": False, "epochs": 5},
    "mf-als": {"tune": False, "epochs": 3},
    "vh": _VH, "vh-phd": _VH, "vh-bias": _VH,
}
CASES = [(n, 32, {}) for n in methods.REGISTRY] + [("cccf", 64, {"blocks": [8, 8]})]


@pytest.mark.parametrize("name,bits,extra", CASES, ids=[f"{n}-{b}" + ("-blocks" if e else "")
                                                         for n, b, e in CASES])
def test_training_metrics_equal_a_rescoring_of_the_stored_arrays(name, bits, extra, synthetic_split, tmp_path):
    """``fit`` + ``make_run`` records what ``fitted(run)`` + ``evaluate`` computes again."""
    sp = synthetic_split
    method = methods.get(name)
    defaults = method.defaults(sp.dataset.name, bits)
    over = dict(TINY.get(name, {"tune": False} if "tune" in defaults else {}), **extra)
    cfg = methods.resolve_config(name, sp.dataset.name, bits, over)
    assert method.grid(cfg, bits) == []
    model = method.fit(sp, bits, 0, cfg)
    assert isinstance(model, method.model) and model.ranks_by == method.ranks_by
    run = training.make_run(method, sp, bits, 0, cfg, model, 0.0)
    ties, discount = cfg["ties"], cfg.get("discount", "paper")
    for r in (run, results.load(results.save(run, root=tmp_path))):
        again = training.fitted(r)
        assert type(again) is type(model)
        pu = evaluation.evaluate(again, sp.test, ties=ties, discount=discount)
        _close_per_user(pu, r.per_user)
        s = metrics.summarize(pu)
        for k in METRIC_COLUMNS:
            assert s[k] == pytest.approx(r.metrics[k], abs=1e-12)
        valid = metrics.summarize(evaluation.evaluate(again, sp.valid, ties=ties, discount=discount))
        assert valid["ndcg@10"] == pytest.approx(r.metrics["valid_ndcg@10"], abs=1e-12)
    # the rebuilt model gives the fitted model's values
    u, i = sp.test.user, sp.test.item
    np.testing.assert_array_equal(training.fitted(run).pairs(u, i), model.pairs(u, i))
