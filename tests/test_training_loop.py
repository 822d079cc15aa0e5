"""The shared training loop (:mod:`phdlib.methods.loop`) on a toy learner that is not VH.

The toy learner is a few numpy numbers pulled toward a target; its validation
score is a scripted sequence, so every stop, best iteration and log row is known
in advance. No PyTorch.
"""
from __future__ import annotations

import numpy as np
import pytest

from phdlib.methods.loop import CAP_REASON, Budget, EarlyStopping, Learner, LoopResult, train


class Toy:
    """Scores pulled toward a target; validation scores read from ``script``."""

    def __init__(self, script, metric="ndcg@10"):
        self.params = np.zeros(4)
        self.target = np.arange(4.0)
        self.script, self.metric = list(script), metric
        self.it, self.evals = 0, 0
        self.seen = {}  # iteration -> params at its evaluation
        self.calls = []

    @property
    def iteration(self) -> int:
        return self.it

    def advance(self, count):
        self.calls.append(("advance", count))
        losses = []
        for _ in range(count):
            self.params += 0.1 * (self.target - self.params)
            losses.append(float(np.mean((self.target - self.params) ** 2)))
            self.it += 1
        return {"train_loss": float(np.mean(losses)), "step_size": 0.1}

    def validate(self):
        self.calls.append(("validate",))
        score = self.script[min(self.evals, len(self.script) - 1)]
        self.evals += 1
        self.seen[self.it] = self.params.copy()
        return ({self.metric: score, "mrr": score / 2},
                {"distance": float(np.abs(self.target - self.params).sum())})

    def state(self):
        self.calls.append(("state",))
        return self.params.copy()

    def load_state(self, state):
        self.calls.append(("load_state",))
        self.params = np.array(state, copy=True)


def _budget(**kw):
    base = dict(eval_every=10, patience=3, min_iterations=0, max_iterations=1000)
    base.update(kw)
    return Budget(**base)


COLUMNS = ["iteration", "seconds", "train_seconds", "train_loss", "step_size",
           "valid_ndcg@10", "valid_mrr", "distance", "best"]


def test_the_toy_is_a_learner():
    assert isinstance(Toy([0.5]), Learner)


def test_patience_stops_and_the_best_state_is_restored():
    toy = Toy([0.1, 0.3, 0.2, 0.25, 0.1, 0.9])
    res = train(toy, _budget())
    assert isinstance(res, LoopResult)
    assert res.iterations == 50 and res.best_iteration == 20 and res.best == 0.3
    assert res.stop_reason == ("no improvement of the validation score in 3 evaluations "
                               "(best 0.3000 at iteration 20)")
    np.testing.assert_array_equal(toy.params, toy.seen[20])
    assert not np.array_equal(toy.seen[20], toy.seen[50])
    # one row per evaluation, in order, with the learner's statistics in place
    assert list(res.log.columns) == COLUMNS
    assert res.log["iteration"].tolist() == [10, 20, 30, 40, 50]
    assert res.log["valid_ndcg@10"].tolist() == [0.1, 0.3, 0.2, 0.25, 0.1]
    assert res.log["best"].tolist() == [0.1, 0.3, 0.3, 0.3, 0.3]
    assert (res.log["step_size"] == 0.1).all() and res.log["train_loss"].is_monotonic_decreasing
    assert res.log["train_seconds"].is_monotonic_increasing
    assert 0 <= res.seconds_to_best <= res.log["seconds"].iloc[-1]
    assert res.ms_per_iteration == pytest.approx(1000 * res.train_seconds / 50)


def test_the_order_of_calls():
    toy = Toy([0.1, 0.3, 0.2, 0.25, 0.1])
    train(toy, _budget())
    ev = [("advance", 10), ("validate",)]
    assert toy.calls == ([("state",)] + ev + [("state",)] + ev + [("state",)] + ev * 3
                         + [("load_state",)])


def test_min_iterations_defers_the_stop():
    toy = Toy([0.1, 0.3] + [0.2] * 20)
    res = train(toy, _budget(min_iterations=80))
    # evaluations at 30..70 do not count; 80, 90, 100 are the three in a row
    assert res.iterations == 100 and res.best_iteration == 20
    assert len(res.log) == 10
    np.testing.assert_array_equal(toy.params, toy.seen[20])


def test_min_iterations_still_keeps_an_improvement_before_it():
    toy = Toy([0.1, 0.2, 0.5, 0.4, 0.3, 0.2, 0.1])
    res = train(toy, _budget(min_iterations=40, patience=2))
    assert res.best_iteration == 30 and res.iterations == 50


def test_max_iterations_caps_training():
    toy = Toy(np.linspace(0.1, 0.9, 50))
    res = train(toy, _budget(max_iterations=45))
    # whole intervals: the evaluation at 50 is the first at or past the cap
    assert res.iterations == 50 and len(res.log) == 5
    assert res.stop_reason == f"{CAP_REASON}=45"
    assert res.best_iteration == 50
    np.testing.assert_array_equal(toy.params, toy.seen[50])


def test_a_cap_below_the_interval_warns_and_trains_one_interval():
    with pytest.warns(RuntimeWarning, match="whole evaluation intervals"):
        res = train(Toy([0.5]), _budget(max_iterations=5))
    assert res.iterations == 10 and res.stop_reason == f"{CAP_REASON}=5"


def test_the_callback_gets_each_row():
    rows = []
    res = train(Toy([0.1, 0.3, 0.2, 0.25, 0.1]), _budget(), callback=rows.append)
    assert len(rows) == len(res.log) == 5
    assert [r["iteration"] for r in rows] == res.log["iteration"].tolist()
    assert all(list(r) == COLUMNS for r in rows)


def test_the_stop_metric_decides():
    toy = Toy([0.1, 0.3, 0.2, 0.25, 0.1], metric="auc")
    res = train(toy, _budget(stop_metric="auc"))
    assert res.best_iteration == 20 and "valid_auc" in res.log.columns
    with pytest.raises(KeyError, match="stop_metric"):
        train(Toy([0.1]), _budget(stop_metric="ndcg@5"))


def test_a_progress_bar(capsys):
    res = train(Toy([0.1, 0.3, 0.2, 0.25, 0.1]), _budget(), progress="toy-4")
    assert res.iterations == 50
    assert "toy-4" in capsys.readouterr().err


def test_the_budget_from_a_config_and_its_checks():
    b = Budget.from_config({"eval_every": 250, "patience": 1, "min_iterations": 0,
                            "max_iterations": 1500, "stop_metric": "mrr", "lr": 0.1})
    assert b == Budget(250, 1, 0, 1500, "mrr")
    assert b.stopper() == EarlyStopping(1, 0, 1500)
    for bad in (dict(eval_every=0), dict(patience=0), dict(min_iterations=-1),
                dict(max_iterations=0)):
        with pytest.raises(ValueError):
            _budget(**bad)


def test_earliest_stop():
    s = EarlyStopping(patience=3, min_iterations=100, max_iterations=200)
    assert s.earliest_stop(0, 10) == 100          # not before min_iterations
    s.update(100, 0.5)
    assert s.earliest_stop(100, 10) == 130        # three more evaluations
    s2 = EarlyStopping(patience=50, min_iterations=0, max_iterations=45)
    assert s2.earliest_stop(0, 10) == 54          # the cap's interval at most
