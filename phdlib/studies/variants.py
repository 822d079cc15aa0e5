"""The VH variant study of the chapter "Variational hashing": what was tried, and training it.

:data:`VARIANTS` lists the VH configurations tried to close VH's gap to the
paper (each a set of config overrides of the method ``vh`` or ``vh-phd``),
trained for a fixed number of iterations so that their validation curves can
be compared; :func:`run_variants` trains or reuses them through
:func:`phdlib.experiments.training.run`. Their table and findings are in
:mod:`phdlib.report.vh`.
"""
from __future__ import annotations
from .. import experiments, results
from ..experiments import runner

__all__ = ["VARIANT_ITERATIONS", "QUICK_ITERATIONS", "VARIANTS", "variant_overrides", "run_variants"]

#: Fixed budget of the variant study (iterations; no early stopping).
VARIANT_ITERATIONS = 24_000

#: Iterations of every variant in the quick profile (a check that the code runs).
QUICK_ITERATIONS = 1500

#: name -> (method, overrides, fixed budget?, what it tests). The first entry
#: is the released code's training as is (early stopping from the first
#: evaluation); the others train under the default budget rule (at least
#: 20,000 iterations), so that every VH entry but one is a point of VH's or
#: VH_PHD's tuning grid and shared with it in the store; a fixed budget
#: (VARIANT_ITERATIONS, no early stop) remains available for new entries. Override keys are VH config
#: keys (``lr``, ``train_sampling``, ``noise_std``, ``min_iterations``,
#: ``max_iterations``).
VARIANTS: dict[str, tuple[str, dict, bool, str]] = {
    "released": ("vh", {"lr": 0.001, "train_sampling": "stochastic", "min_iterations": 0}, False,
                 "the released code: lr 0.001, stochastic training, patience from the first evaluation"),
    "lr 0.001": ("vh", {"lr": 0.001, "train_sampling": "stochastic"}, False,
                 "the paper's learning rate"),
    "lr 0.005": ("vh", {"lr": 0.005, "train_sampling": "stochastic"}, False,
                 "the largest learning rate of the paper's grid"),
    "lr 0.005, no noise": ("vh", {"lr": 0.005, "train_sampling": "stochastic", "noise_std": 0.0},
                           True, "no noise injection (a fixed budget of 24,000 iterations)"),
    "lr 0.005, deterministic training": ("vh", {"lr": 0.005, "train_sampling": "deterministic"},
                                         False, "mu = 0.5 in training too"),
    "VH_PHD (default)": ("vh-phd", {}, False,
                         "VH_PHD's single point (the grid's choice), default budget rule"),
    "VH_PHD lr 0.001": ("vh-phd", {"lr": 0.001}, False, "VH_PHD with the paper's learning rate"),
    "VH_PHD deterministic training": ("vh-phd", {"train_sampling": "deterministic"}, False,
                                      "VH_PHD with mu = 0.5 in training too"),
}


def variant_overrides(name: str, profile: str = "full") -> tuple[str, dict]:
    """(method, config overrides) of variant ``name`` under ``profile`` (``"full"`` or ``"quick"``).

    Every variant is a single configuration (``tune=False``); the VH_PHD
    variants under the default budget are points of VH_PHD's tuning grid, so
    the store shares them with it.
    """
    if name not in VARIANTS:
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    method, ov, fixed, _ = VARIANTS[name]
    ov = {**ov, "tune": False}
    if fixed:
        ov.update(min_iterations=VARIANT_ITERATIONS, max_iterations=VARIANT_ITERATIONS)
    if profile == "quick":
        ov["max_iterations"] = QUICK_ITERATIONS
        ov["min_iterations"] = min(ov.get("min_iterations", QUICK_ITERATIONS), QUICK_ITERATIONS)
    elif profile != "full":
        raise ValueError(f"profile must be 'full' or 'quick', got {profile!r}")
    return method, ov


def run_variants(dataset: str, bits: int = 64, seed: int = 0, profile: str = "full",
                 names=None, jobs: int | None = 1, split_seed: int = 0,
                 progress: bool = False) -> dict:
    """Train (or reuse from the store) each variant of ``names`` (default: all); name -> Run.

    The variants run as one grid (:func:`phdlib.experiments.runner.run_grid`, ``jobs``
    in parallel); only what the store lacks is trained.
    """
    names = list(names or VARIANTS)
    cells = {}
    for name in names:
        method, ov = variant_overrides(name, profile)
        cells[name] = experiments.Cell(dataset, method, int(bits), int(seed),
                                       experiments.freeze(ov), split_seed)
    st = runner.run_grid(list(cells.values()), jobs=jobs, progress=progress,
                         name=f"{dataset}-{profile}-vh-variants")
    path = dict(zip(st["cell"], st["path"]))
    return {name: results.load(path[c], arrays=False) for name, c in cells.items()}
