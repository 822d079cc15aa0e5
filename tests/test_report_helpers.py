"""Shared by the tests of phdlib.report: a stub method registry and hand-made runs.

The report takes its method lists and labels from :mod:`phdlib.methods`; the
tests run against :data:`SPECS`, stub methods with the registry's names and
properties (no training code behind them).
"""
from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest

from phdlib import experiments as E
from phdlib import methods, results

#: name, label, ranks_by, learns_codes, in_paper, variant_of of the registry's methods, in
#: its order (stub methods with these properties stand in for the real ones in the tests).
SPECS = [(n, m.label, m.ranks_by, m.learns_codes, m.in_paper, m.variant_of)
         for n, m in ((n, methods.get(n)) for n in methods.REGISTRY)]

PAPER = ["cccf", "dcf", "mf-mean", "mf-median", "vh", "vh-phd", "mf"]
HAMMING = ["cccf", "dcf", "mf-mean", "mf-median", "vh"]
ADDITIONS = ["mf-als", "vh-bias", "dcf-phd", "dcf-bias", "item-mean", "popularity", "random"]
FIGURE = ["cccf", "dcf", "vh", "vh-phd", "mf"]

#: Mean NDCG@5 of each method's hand-made runs (NDCG@10 is 0.02 above, MRR 0.01 below).
LEVELS = {"cccf": .68, "dcf": .69, "mf-mean": .56, "mf-median": .56, "vh": .70,
          "vh-phd": .75, "mf": .80, "mf-als": .82, "vh-bias": .71, "dcf-phd": .72, "dcf-bias": .695,
          "item-mean": .74,
          "popularity": .70, "random": .52}


def _stub(name, label, ranks_by, learns_codes, in_paper, variant_of):
    m = methods.Method()
    m.name, m.label, m.ranks_by, m.learns_codes, m.in_paper = name, label, ranks_by, learns_codes, in_paper
    m.variant_of = variant_of
    return m


@pytest.fixture
def stub_registry(monkeypatch):
    """Replace the method registry by :data:`SPECS` for one test."""
    monkeypatch.setattr(methods, "REGISTRY", {})
    monkeypatch.setattr(methods, "_EXTRA", {s[0]: _stub(*s) for s in SPECS})
    yield


def make_run(method, bits, seed, per_user_means, n_users=200, dataset="ml-1m", rng=None):
    """A :class:`phdlib.results.Run` whose per-user metrics scatter around ``per_user_means``."""
    rng = rng or np.random.default_rng(zlib.crc32(f"{method}/{bits}/{seed}".encode()))
    cols = {"user": np.arange(n_users)}
    for met, mu in per_user_means.items():
        cols[met] = np.clip(mu + 0.05 * rng.standard_normal(n_users), 0, 1)
    pu = pd.DataFrame(cols)
    return results.Run(method=method, dataset=dataset, bits=bits, seed=seed, config={},
                       metrics={m: float(pu[m].mean()) for m in per_user_means},
                       per_user=pu, fingerprint="f", wall_seconds=1.0)


def make_runs(level: dict, seeds=(0, 1), bits=(32, 64), dataset="ml-1m"):
    """``{Cell: Run}`` for every method of ``level`` at every width and seed."""
    out = {}
    for m, mu in level.items():
        for b in bits:
            for s in seeds:
                out[E.Cell(dataset, m, b, s)] = make_run(
                    m, b, s, {"ndcg@5": mu, "ndcg@10": mu + .02, "mrr": mu - .01}, dataset=dataset)
    return out


def test_stub_registry_gives_the_lists_the_report_uses(stub_registry):
    assert methods.names(in_paper=True) == PAPER
    assert methods.hashing_baselines() == HAMMING
    assert methods.names(in_paper=False, variant=False) == ADDITIONS
    assert methods.label("vh-phd") == "VH_PHD" and methods.label("nope") == "nope"


def test_the_real_registry_gives_the_paper_lists():
    assert [s[0] for s in SPECS] == list(methods.REGISTRY)
    assert methods.names(in_paper=True) == PAPER and methods.hashing_baselines() == HAMMING
    assert methods.names(in_paper=False, variant=False) == ADDITIONS
    assert methods.names(variant=True) == ["vh-lazy", "vh-phd-lazy"]
