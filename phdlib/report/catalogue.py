"""The protocol chapter's extension: every model ranked over the full item catalogue, and
VH_PHD tested against its Hamming twin, the best Hamming code and popularity there.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import evaluation, methods
from ..evaluation import stats
from ..results import derived
from ..experiments import training
from ..evaluation.metrics import METRIC_LABELS, METRICS
from . import page
from .page import p_text
from .style import PHD, VH as HAMMING


def _num(v: float, digits: int = 4, sign: bool = False) -> str:
    return page.num(v, digits, sign=sign)


def _widths(seed0: Mapping, widths) -> list[int]:
    return sorted({b for _, b in seed0}) if widths is None else [int(b) for b in widths]


__all__ = ["catalogue", "catalogue_tests", "catalogue_findings"]

#: How :func:`catalogue` ranks: every item but the user's training and validation items,
#: ties by their expectation, the paper's discount, NDCG at 5 and 10.
_CATALOGUE = {"exclude": ("train", "valid"), "ties": "expected", "discount": "paper",
              "ks": (5, 10)}


def catalogue(seed0: Mapping, split, methods_: Sequence[str], widths: Iterable[int]
              ) -> tuple[pd.DataFrame, dict]:
    """Each model evaluated over the full item catalogue (our extension).

    For every test user, every item the user did not rate in training or
    validation is ranked (:func:`phdlib.evaluation.evaluate_catalogue`; an
    item's relevance is the user's test rating, 0 for the rest), once per
    stored run and split (:func:`phdlib.results.derived.frame`: the landing
    page reads what the protocol chapter computed). seed0:
    ``{(method, bits): Run}`` with arrays; split: the split the runs were
    trained on; methods_: method names; widths: code widths.

    Returns ``(table, per_user)``: ``table`` has index ``bits, method``
    (names) and columns ``ndcg@5``, ``ndcg@10``, ``mrr`` (catalogue, means
    over test users, 0..1), ``ndcg@10 protocol`` (the stored value under the
    paper's protocol) and ``items ranked`` (median per user);
    ``per_user`` maps ``(method, bits)`` to the per-user frame (columns
    ``user``, ``ndcg@5``, ``ndcg@10``, ``mrr``, ``n_ranked``, ``n_test``).
    """

    rows, per_user = [], {}
    for b in widths:
        for m in methods_:
            r = seed0[(m, int(b))]
            pu = derived.frame(r, split, {"frame": "catalogue", **_CATALOGUE},
                               lambda r=r: evaluation.evaluate_catalogue(training.fitted(r),
                                                                         split, **_CATALOGUE))
            per_user[(m, int(b))] = pu
            rows.append({"bits": int(b), "method": m,
                         **{k: float(pu[k].mean()) for k in METRICS},
                         "ndcg@10 protocol": float(r.metrics["ndcg@10"]),
                         "items ranked": float(np.median(pu["n_ranked"]))})
    return pd.DataFrame(rows).set_index(["bits", "method"]), per_user


def _best_hamming(table: pd.DataFrame, bits: int, hamming: Sequence[str]) -> str | None:
    t = table.xs(bits, level="bits")
    cand = [m for m in hamming if m in t.index]
    return max(cand, key=lambda m: t.loc[m, "ndcg@10"]) if cand else None


def catalogue_tests(per_user: Mapping, table: pd.DataFrame, a: str = PHD,
                    against: Sequence[str] = (HAMMING, "best hamming", "popularity"),
                    hamming: Sequence[str] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """``a`` against each baseline over the catalogue, per width: paired two-tailed t-test
    over users, Bonferroni over the three metrics of one (width, baseline).

    per_user, table: :func:`catalogue`; against: method names, or ``"best
    hamming"`` for the Hamming code with the highest catalogue NDCG@10 at that
    width among ``hamming`` (default :func:`phdlib.methods.hashing_baselines`).
    A baseline without per-user results at a width is left out. Returns index
    ``bits, baseline, metric`` (baseline: a method name); columns ``role``
    (what the baseline stands for), ``method`` (mean of ``a``),
    ``baseline value``, ``difference`` (mean of a − baseline), ``ci low``,
    ``ci high``, ``p`` (Bonferroni-adjusted), ``d_z`` and ``verdict``
    (``"better"``, ``"worse"`` or ``"no significant difference"``).
    """
    hamming = list(methods.hashing_baselines() if hamming is None else hamming)
    rows = []
    for bits in sorted({b for _, b in per_user}):
        if (a, bits) not in per_user:
            continue
        for base in against:
            role = base
            if base == "best hamming":
                base = _best_hamming(table, bits, hamming)
                role = "best Hamming code"
            elif base == HAMMING:
                role = "Hamming twin"
            if base is None or (base, bits) not in per_user or base == a:
                continue
            c = stats.compare({a: per_user[(a, bits)], base: per_user[(base, bits)]}, [a], [base],
                              METRICS, correction="none")
            padj = stats.adjust(c["p"].to_numpy(), "bonferroni")
            for (_, r), p in zip(c.iterrows(), padj):
                verdict = ("better" if r["mean_diff"] > 0 and p < alpha else
                           "worse" if r["mean_diff"] < 0 and p < alpha else
                           "no significant difference")
                rows.append({"bits": bits, "baseline": base, "metric": r["metric"], "role": role,
                             "method": r["mean_method"], "baseline value": r["mean_baseline"],
                             "difference": r["mean_diff"], "ci low": r["ci_low"],
                             "ci high": r["ci_high"], "p": float(p), "d_z": r["d_z"],
                             "verdict": verdict})
    return pd.DataFrame(rows).set_index(["bits", "baseline", "metric"])


def catalogue_findings(tests: pd.DataFrame, seed0: Mapping | None = None, a: str = PHD,
                       metric: str = "ndcg@10") -> list[str]:
    """Sentences from :func:`catalogue_tests`, one per (width, baseline), on ``metric``.

    Against the Hamming twin (VH) the sentence gives the difference under the
    paper's protocol too (from ``seed0``); against the best Hamming code it
    carries the verdict on the paper's ordering (``AGREES``/``DISAGREES``:
    VH_PHD significantly ahead, or not).
    """
    la = methods.label(a)
    out = []
    t = tests.xs(metric, level="metric")
    for (bits, base), r in t.iterrows():
        lb = methods.label(base)
        diff = (f"{la} − {lb} = {_num(r['difference'], sign=True)} {METRIC_LABELS[metric]} "
                f"(95% CI {_num(r['ci low'], sign=True)} to {_num(r['ci high'], sign=True)}, "
                f"{p_text(r['p'])}, Bonferroni over three metrics)")
        if r["verdict"] == "better":
            what = f"{la} ranks significantly better"
        elif r["verdict"] == "worse":
            what = f"{la} ranks significantly worse"
        else:
            what = "no significant difference"
        if r["role"] == "best Hamming code":
            verdict = "AGREES" if r["verdict"] == "better" else "DISAGREES"
            out.append(f"{verdict} (PHD codes rank better than Hamming codes): At {bits} bits "
                       f"the best Hamming code over the catalogue is {lb}; {diff}: {what}.")
        elif r["role"] == "Hamming twin":
            s = f"At {bits} bits over the catalogue, {diff}: {what}"
            if seed0 is not None and (a, bits) in seed0 and (base, bits) in seed0:
                proto = seed0[(a, bits)].metrics[metric] - seed0[(base, bits)].metrics[metric]
                s += f"; under the paper's protocol the difference is {_num(proto, sign=True)}"
            out.append(s + ".")
        else:
            out.append(f"At {bits} bits over the catalogue, against {lb}: {diff}: {what}.")
    return out


