"""The training loop and its budget: one loop for every method that learns by iterations.

A learned method supplies a :class:`Learner` (its step, its validation, its
state) and a :class:`Budget`; :func:`train` does the rest, in the manner of
d2l's ``Trainer.fit``::

    result = train(learner, Budget.from_config(cfg), progress="VH-64")
    result.log             # one row per evaluation (a DataFrame)
    result.best_iteration  # the learner now holds the state of that iteration

The budget's rule (:class:`EarlyStopping`): evaluate on the validation split
every ``eval_every`` iterations; an evaluation that does not improve the best
validation score so far counts against ``patience``; training stops when
``patience`` evaluations in a row did not improve, but never before iteration
``min_iterations`` (evaluations before that point still update the best state,
they just do not count against patience); it always stops at
``max_iterations``. Training runs whole evaluation intervals, so the last
interval may pass ``max_iterations`` when it is not a multiple of
``eval_every``. The state kept, and restored at the end, is the one at the
best validation score (the state before any training when no evaluation ever
improved on ``-inf``, i.e. never).

The released VH code is the special case ``min_iterations=0`` (patience
counted from the first evaluation). The loop draws no random numbers itself:
everything random is the learner's, so a learner trained through it gives the
numbers it would give in a loop of its own that calls the same methods in the
same order (``advance``, ``validate``, then ``state`` on an improvement).
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, runtime_checkable

import pandas as pd

#: How :attr:`EarlyStopping.reason` begins when training ended at the cap, not by patience.
CAP_REASON = "reached max_iterations"

__all__ = ["CAP_REASON", "Budget", "EarlyStopping", "Learner", "LoopResult", "train"]


# --------------------------------------------------------------------------- the budget


@dataclass
class EarlyStopping:
    """Patience-based early stopping with a start point.

    Parameters
    ----------
    patience : int
        Evaluations in a row without improvement that stop training (>= 1).
    min_iterations : int
        No stop before this iteration (>= 0); non-improving evaluations at
        iterations ``< min_iterations`` do not count against patience.
    max_iterations : int
        Hard cap on iterations (> 0).
    min_delta : float
        An evaluation improves when ``score > best + min_delta``.

    Call :meth:`update` after every evaluation; it returns True when the new
    score is the best so far (keep the state). :attr:`stop` says whether to
    stop, :attr:`reason` why.
    """

    patience: int = 5
    min_iterations: int = 0
    max_iterations: int = 200_000
    min_delta: float = 0.0
    best: float = field(default=float("-inf"), init=False)
    best_iteration: int = field(default=-1, init=False)
    bad: int = field(default=0, init=False)
    stop: bool = field(default=False, init=False)
    reason: str = field(default="", init=False)

    def __post_init__(self):
        if int(self.patience) < 1:
            raise ValueError(f"patience must be >= 1, got {self.patience!r}")
        if int(self.min_iterations) < 0:
            raise ValueError(f"min_iterations must be >= 0, got {self.min_iterations!r}")
        if int(self.max_iterations) < 1:
            raise ValueError(f"max_iterations must be >= 1, got {self.max_iterations!r}")

    def update(self, iteration: int, score: float) -> bool:
        """Record the validation ``score`` at ``iteration``; True if it is the new best."""
        improved = score > self.best + self.min_delta
        if improved:
            self.best, self.best_iteration, self.bad = float(score), int(iteration), 0
        elif iteration >= self.min_iterations:
            self.bad += 1
        if self.bad >= self.patience and iteration >= self.min_iterations:
            self.stop, self.reason = True, (
                f"no improvement of the validation score in {self.patience} evaluations "
                f"(best {self.best:.4f} at iteration {self.best_iteration})")
        if iteration >= self.max_iterations and not self.stop:
            self.stop, self.reason = True, f"{CAP_REASON}={self.max_iterations}"
        return improved

    def earliest_stop(self, iteration: int, every: int) -> int:
        """Iteration of the earliest possible stop from ``iteration`` on (evaluating every
        ``every`` iterations); the progress bar's total."""
        nxt = iteration + (self.patience - self.bad) * every
        start = -(-self.min_iterations // every) * every
        return int(min(max(nxt, start), self.max_iterations + every - 1))


@dataclass(frozen=True)
class Budget:
    """How long a learner trains: the loop's settings, all counted in iterations.

    eval_every: iterations between evaluations (>= 1; training runs whole
    intervals); patience, min_iterations, max_iterations, min_delta: as
    :class:`EarlyStopping`; stop_metric: the key of the learner's validation
    metrics that decides (higher is better), e.g. ``"ndcg@10"``.
    """

    eval_every: int
    patience: int
    min_iterations: int
    max_iterations: int
    stop_metric: str = "ndcg@10"
    min_delta: float = 0.0

    def __post_init__(self):
        if int(self.eval_every) < 1:
            raise ValueError(f"eval_every must be >= 1, got {self.eval_every!r}")
        self.stopper()  # checks the rest

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Budget:
        """The budget in a method's config (keys ``eval_every``, ``patience``,
        ``min_iterations``, ``max_iterations``, ``stop_metric``; ``min_delta`` optional)."""
        return cls(int(config["eval_every"]), config["patience"], config["min_iterations"],
                   config["max_iterations"], config["stop_metric"],
                   float(config.get("min_delta", 0.0)))

    def stopper(self) -> EarlyStopping:
        """A fresh :class:`EarlyStopping` for this budget."""
        return EarlyStopping(self.patience, self.min_iterations, self.max_iterations,
                             self.min_delta)


# --------------------------------------------------------------------------- the method's side


@runtime_checkable
class Learner(Protocol):
    """What a learned method gives the loop: its step, its validation, its state.

    The loop calls, per evaluation interval: :meth:`advance` once, then
    :meth:`validate` once, then :meth:`state` when the validation score is the
    best so far; :meth:`state` once more before training (the fallback) and
    :meth:`load_state` once at the end (the best state).
    """

    @property
    def iteration(self) -> int:
        """Iterations run so far (0 before training); the log's ``iteration`` column."""

    def advance(self, count: int) -> Mapping[str, float]:
        """Run ``count`` more training iterations.

        Returns the training statistics of those iterations, one float each,
        logged in this order right after ``train_seconds``; by convention
        ``"train_loss"`` (the mean training loss over the interval, in the
        method's loss units; NaN or a placeholder where it was not measured)
        comes first. Only this call is timed as training time.
        """

    def validate(self) -> tuple[Mapping[str, float], Mapping[str, float]]:
        """Evaluate the current model on the validation split.

        Returns ``(metrics, stats)``: ``metrics`` the validation metrics (each
        a mean over validation users, higher is better, e.g. ``{"ndcg@5": ..,
        "ndcg@10": .., "mrr": ..}``), logged as ``valid_<name>``; the budget's
        ``stop_metric`` must be one of them. ``stats``: any other numbers of
        this evaluation (e.g. statistics of the codes), logged as given after
        the metrics.
        """

    def state(self) -> Any:
        """A copy of everything :meth:`load_state` needs to return to this point
        (later training must not change it)."""

    def load_state(self, state: Any) -> None:
        """Return the model to a state from :meth:`state`."""


# --------------------------------------------------------------------------- the loop


@dataclass
class LoopResult:
    """What :func:`train` returns (the learner itself then holds the best state).

    log: one row per evaluation, columns ``iteration``, ``seconds`` (wall
    clock since training started, evaluations included), ``train_seconds``
    (time in :meth:`Learner.advance` so far), the learner's training
    statistics, ``valid_<metric>`` per validation metric, the learner's
    evaluation statistics, and ``best`` (the best ``stop_metric`` so far);
    best_iteration: the iteration of the best state (-1: none);
    iterations: iterations run; stop_reason: :attr:`EarlyStopping.reason`;
    train_seconds: total training time (no evaluation), seconds;
    seconds_to_best: ``seconds`` of the best evaluation (0 without one).
    """

    log: pd.DataFrame
    best_iteration: int
    iterations: int
    stop_reason: str
    train_seconds: float
    seconds_to_best: float
    best: float = float("-inf")

    @property
    def ms_per_iteration(self) -> float:
        """Mean training time per iteration (no evaluation), milliseconds."""
        return 1000.0 * self.train_seconds / max(self.iterations, 1)


def train(learner: Learner, budget: Budget, progress: str | None = None,
          callback: Callable[[dict], None] | None = None, stacklevel: int = 1) -> LoopResult:
    """Train ``learner`` within ``budget``, keep and restore the best state.

    Every ``budget.eval_every`` iterations: :meth:`Learner.advance`, then
    :meth:`Learner.validate`, then one log row; the budget's
    :class:`EarlyStopping` decides on ``metrics[budget.stop_metric]`` whether
    this is the best state (kept by :meth:`Learner.state`) and whether to stop.
    ``callback(row)`` is called with each log row (a dict, as in
    :attr:`LoopResult.log`) after it is logged. ``progress``: the label of a
    text progress bar (tqdm) on stderr; None: no bar. A budget whose
    ``max_iterations`` is below ``eval_every`` warns (training still runs one
    whole interval); ``stacklevel`` places that warning as :func:`warnings.warn`'s
    would, counted from the caller of :func:`train` (1: the caller itself).
    """
    stopper, every, key = budget.stopper(), int(budget.eval_every), budget.stop_metric
    if budget.max_iterations < every:
        warnings.warn(f"training runs whole evaluation intervals: max_iterations "
                      f"{budget.max_iterations} is below eval_every {every}, so training runs "
                      f"{every} iterations (set eval_every too)", RuntimeWarning,
                      stacklevel=stacklevel + 1)
    rows, best_state, train_time, t_start = [], learner.state(), 0.0, time.perf_counter()
    seconds_to_best, bar = 0.0, None
    if progress:
        from tqdm import tqdm  # plain text bar: tqdm.auto warns without ipywidgets in notebooks

        bar = tqdm(total=stopper.earliest_stop(0, every), desc=str(progress), unit="it",
                   mininterval=1.0, leave=False)
    try:
        while not stopper.stop:
            t0 = time.perf_counter()
            trained = learner.advance(every)
            train_time += time.perf_counter() - t0
            metrics, stats = learner.validate()
            if key not in metrics:
                raise KeyError(f"stop_metric {key!r} is not among the validation metrics "
                               f"{sorted(metrics)}")
            it = int(learner.iteration)
            row = {"iteration": it, "seconds": time.perf_counter() - t_start,
                   "train_seconds": train_time, **trained,
                   **{f"valid_{k}": v for k, v in metrics.items()}, **stats}
            if stopper.update(it, metrics[key]):
                best_state, seconds_to_best = learner.state(), row["seconds"]
            row["best"] = stopper.best
            rows.append(row)
            if callback is not None:
                callback(row)
            if bar is not None:
                bar.update(every)
                bar.total = it if stopper.stop else stopper.earliest_stop(it, every)
                bar.set_postfix({f"valid_{key}": f"{metrics[key]:.4f}",
                                 "best": f"{stopper.best:.4f}"})
    finally:
        if bar is not None:
            bar.close()
    learner.load_state(best_state)
    return LoopResult(log=pd.DataFrame(rows), best_iteration=stopper.best_iteration,
                      iterations=int(learner.iteration), stop_reason=stopper.reason,
                      train_seconds=train_time, seconds_to_best=seconds_to_best,
                      best=stopper.best)
