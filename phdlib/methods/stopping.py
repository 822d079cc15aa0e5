"""The training budget: evaluation interval, patience, and when stopping may start.

One rule for every model trained by :mod:`phdlib.methods.vh`: evaluate on the
validation split every ``eval_every`` iterations; an evaluation that does not
improve the best validation score so far counts against ``patience``; training
stops when ``patience`` evaluations in a row did not improve, but never before
iteration ``min_iterations`` (evaluations before that point still update the
best state, they just do not count against patience); it always stops at
``max_iterations``. The state kept is the one at the best validation score.

The released code is the special case ``min_iterations=0`` (patience counted
from the first evaluation).
"""
from __future__ import annotations

from dataclasses import dataclass, field

#: How :attr:`EarlyStopping.reason` begins when training ended at the cap, not by patience.
CAP_REASON = "reached max_iterations"


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
