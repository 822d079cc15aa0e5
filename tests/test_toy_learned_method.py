"""A new learned method, written in this file, goes the whole way: loop, store, evaluation, Table 1.

The toy learns ±1 codes: real embeddings ``U`` (users) and ``V`` (items),
float64 ``(n, bits)``, whose ``tanh`` inner product, divided by ``bits``,
is fitted by numpy mini-batch SGD to the rating mapped to ``[-1, 1]``; its
codes are the signs, ranked by Hamming distance. It trains through the
shared loop (:func:`phdlib.methods.loop.train`: a :class:`Learner` and a
:class:`Budget`), declares what every method declares (label, colour, quick
profile, config spec) and is registered at run time; nothing else in the
library is told about it.
"""
from __future__ import annotations

import numpy as np
import pytest

from phdlib import codes as C
from phdlib import methods, results
from phdlib.evaluation import evaluate
from phdlib.evaluation.metrics import METRICS
from phdlib.experiments import Cell, training
from phdlib.methods import loop
from phdlib.methods import spec as S
from phdlib.methods.base import Method
from phdlib.methods.fitted import CodeModel, evaluate_codes
from phdlib.report import style
from phdlib.report import catalogue as rcatalogue
from phdlib.report import protocol as rprotocol
from phdlib.report.table1 import format_table1, table1

from test_method_declarations import assert_declared, registered


class _SignLearner:
    """The toy's side of the loop (:class:`phdlib.methods.loop.Learner`)."""

    def __init__(self, split, bits, seed, cfg):
        ds = split.dataset
        self.rng = np.random.default_rng(seed)
        s = float(cfg["init_scale"])
        self.U = self.rng.uniform(-s, s, (ds.n_users, bits))
        self.V = self.rng.uniform(-s, s, (ds.n_items, bits))
        tr = split.train
        lo, hi = ds.rating_scale
        self.u, self.i = np.asarray(tr.user), np.asarray(tr.item)
        self.t = (2.0 * (np.asarray(tr.rating, np.float64) - lo) / (hi - lo)) - 1.0
        self.valid, self.cfg, self.bits, self.it = split.valid, cfg, bits, 0

    @property
    def iteration(self) -> int:
        return self.it

    def advance(self, count):
        B, lr, losses = int(self.cfg["batch_size"]), float(self.cfg["lr"]), []
        for _ in range(count):
            k = self.rng.integers(0, len(self.t), B)
            u, i = self.u[k], self.i[k]
            tu, ti = np.tanh(self.U[u]), np.tanh(self.V[i])
            err = (tu * ti).sum(1) / self.bits - self.t[k]
            losses.append(float((err ** 2).mean()))
            g = (2.0 * err / (B * self.bits))[:, None]
            np.add.at(self.U, u, -lr * g * ti * (1 - tu ** 2))
            np.add.at(self.V, i, -lr * g * tu * (1 - ti ** 2))
            self.it += 1
        return {"train_loss": float(np.mean(losses))}

    def codes(self):
        return C.pack(np.where(self.U >= 0, 1, -1), "pm1"), C.pack(np.where(self.V >= 0, 1, -1), "pm1")

    def validate(self):
        uc, ic = self.codes()
        per_user = evaluate_codes(uc, ic, self.valid, "hamming", ties=self.cfg["ties"])
        return {k: float(per_user[k].mean()) for k in METRICS}, {"user_ones": float((self.U >= 0).mean())}

    def state(self):
        return self.U.copy(), self.V.copy()

    def load_state(self, state):
        self.U, self.V = (a.copy() for a in state)


class SignSGD(Method):
    """The toy learned method (see the module docstring)."""

    name = "toy-sign-sgd"
    label = "Toy±1 (test)"
    description = "±1 codes: signs of tanh embeddings fitted to ratings by numpy SGD (a test)"
    ranks_by = "hamming"
    learns_codes = True
    model = CodeModel
    color = "tab:olive"
    quick = {"max_iterations": 40, "min_iterations": 0}
    config_spec = S.ConfigSpec(
        hyper={"lr": S.real(0, doc="SGD step size"), "batch_size": S.integer(1, doc="ratings a step"),
               "init_scale": S.real(0, doc="embeddings uniform in [-s, s]"),
               "eval_every": S.integer(1), "patience": S.integer(1), "min_iterations": S.integer(0),
               "max_iterations": S.integer(1), "stop_metric": S.choice(*METRICS)},
        tuning={"tune": S.TUNE, "lr_grid": S.reals(0)},
        evaluation={"ties": S.TIES},
    )

    def defaults(self, dataset, bits):
        return {"lr": 0.5, "batch_size": 64, "init_scale": 0.1, "eval_every": 10, "patience": 3,
                "min_iterations": 200, "max_iterations": 2000, "stop_metric": "ndcg@10",
                "tune": False, "lr_grid": [0.1, 0.5], "ties": "expected", "impl": 1}

    def grid(self, config, bits):
        return [{"lr": float(lr), "tune": False} for lr in config["lr_grid"]] if config["tune"] else []

    def fit(self, split, bits, seed, config, progress=False):
        learner = _SignLearner(split, int(bits), int(seed), config)
        res = loop.train(learner, loop.Budget.from_config(config))
        uc, ic = learner.codes()
        info = {"iterations": res.iterations, "best_iteration": res.best_iteration,
                "train_seconds": res.train_seconds, "stop_reason": res.stop_reason}
        return CodeModel(int(bits), {"user_codes": uc.words, "item_codes": ic.words}, "hamming",
                         res.log, info)


@pytest.fixture
def toy():
    with registered(SignSGD()) as m:
        yield m


def test_the_toy_declares_what_every_method_declares(toy):
    assert_declared([toy.name])
    assert toy.name in methods.names(learns_codes=True, in_paper=False)
    assert methods.label(toy.name) == "Toy±1 (test)" and style.COLORS[toy.name] == "tab:olive"
    with pytest.raises(methods.ConfigTypeError, match=r"'batch_size' must be an integer >= 1, got 0"):
        methods.resolve_config(toy.name, "synthetic", 16, {"batch_size": 0})


def test_the_toy_trains_stores_reloads_evaluates_and_enters_table1(toy, synthetic_split, tmp_path):
    sp, bits = synthetic_split, 16
    assert isinstance(_SignLearner(sp, bits, 0, toy.defaults("synthetic", bits)), loop.Learner)
    quick = dict(toy.quick)
    run = training.run(toy.name, sp, bits, 0, quick, root=tmp_path, progress=False)
    # trained through the shared loop: its log is the loop's, one row per evaluation
    assert run.path is not None and list(run.log["iteration"]) == list(range(10, 41, 10))
    assert {"train_loss", "valid_ndcg@10", "best", "user_ones"} <= set(run.log.columns)
    assert run.arrays["user_codes"].shape == (sp.dataset.n_users, 1)

    # the store gives it back under the same key, for the same inputs
    again = results.find(toy.name, sp.dataset.name, bits, 0, run.config, sp.fingerprint, root=tmp_path)
    assert again is not None and again.key == run.key and again.path == run.path
    loaded = results.load(run.path)
    assert loaded.key == run.key and loaded.method == toy.name
    assert training.run(toy.name, sp, bits, 0, quick, root=tmp_path, progress=False).key == run.key

    # re-scored from its stored codes: the stored test metrics
    model = training.fitted(loaded)
    assert isinstance(model, CodeModel) and model.ranks_by == "hamming"
    per_user = evaluate(model, sp.test, loaded.config["ties"])
    for k in METRICS:
        assert float(per_user[k].mean()) == pytest.approx(loaded.metrics[k], abs=1e-12), k
    assert 0.0 < loaded.metrics["ndcg@10"] <= 1.0

    # Table 1 from stored runs: the toy is one of our additions, asked of the registry
    pop = training.run("popularity", sp, bits, 0, root=tmp_path, progress=False)
    runs = {Cell(sp.dataset.name, toy.name, bits, 0, tuple(sorted(quick.items()))): loaded,
            Cell(sp.dataset.name, "popularity", bits, 0): pop}
    t = table1(runs, sp.dataset.name, bits)
    assert toy.name in t.additions and toy.name not in t.missing and "popularity" not in t.missing
    assert t.values.loc[toy.name, ("ndcg@10", "ours")] == pytest.approx(loaded.metrics["ndcg@10"])
    shown = format_table1(t)
    assert "Toy±1 (test)" in shown.index
    assert set(methods.names(in_paper=True)) <= set(t.missing)   # none of them was run here


def test_the_toy_goes_through_the_protocol_chapters_evaluation(toy, synthetic_split, tmp_path):
    """The protocol chapter's numbers (report.protocol, report.catalogue) take the toy like any
    stored method: its level under the paper's protocol, the item-mean comparison that counts it
    among the hashing methods, and its full-catalogue evaluation from the stored codes."""

    sp, bits = synthetic_split, 16
    seed0 = {(m, bits): training.run(m, sp, bits, 0, dict(methods.get(m).quick), root=tmp_path,
                                     progress=False)
             for m in (toy.name, "item-mean")}
    lv = rprotocol.levels(seed0, [bits])
    assert lv.loc[(bits, toy.name), "learns codes"]
    assert lv.loc[(bits, toy.name), "ndcg@10"] == pytest.approx(seed0[(toy.name, bits)].metrics["ndcg@10"])
    rank = rprotocol.item_mean_rank(seed0, [bits])
    assert (rank["hashing methods"] == 1).all() and (rank["best hashing"] == toy.name).all()
    table, per_user = rcatalogue.catalogue(seed0, sp, [toy.name, "item-mean"], [bits])
    got = table.loc[(bits, toy.name)]
    assert 0.0 <= got["ndcg@10"] <= 1.0 and got["items ranked"] > sp.test.user.size / sp.dataset.n_users
    assert got["ndcg@10 protocol"] == pytest.approx(seed0[(toy.name, bits)].metrics["ndcg@10"])
    assert len(per_user[(toy.name, bits)]) == len(np.unique(sp.test.user))
