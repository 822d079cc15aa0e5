"""The landing page's findings are computed from the store: change a stored metric, the
sentence changes (phdlib.report.landing)."""
from __future__ import annotations

import shutil

from phdlib import experiments, results
from phdlib.experiments import training
from phdlib.report import landing

TINY = {"tune": False, "max_iterations": 300, "min_iterations": 0, "eval_every": 100,
        "batch_size": 50}
METHODS = ("vh", "vh-bias", "vh-phd", "dcf", "item-mean")


def _store(split, root):
    """Train the tiny runs into a scratch store; return their folders by (method, seed)."""
    paths = {}
    for m in METHODS:
        for seed in (0, 1):
            ov = TINY if m.startswith("vh") else {"tune": False, "max_iterations": 2} \
                if m == "dcf" else {}
            r = training.run(m, split, 16, seed, ov, reuse=False, progress=False, root=root)
            paths[(m, seed)] = r.path
    return paths


def _replace(run, root):
    """Store ``run`` in place of the stored run of its key (the store never overwrites one)."""
    shutil.rmtree(run.path)
    results.save(run, root)
    assert results.stored(run.path)


def _store_item_mean(paths, root, value: float):
    """Every seed's stored item-mean run, with NDCG@10 ``value`` for every user."""
    for seed in (0, 1):
        run = results.load(paths[("item-mean", seed)])
        run.per_user["ndcg@10"] = value
        run.metrics["ndcg@10"] = value
        _replace(run, root)


def _runs(split, paths):
    return {experiments.Cell(split.dataset.name, m, 16, seed): results.load(p)
            for (m, seed), p in paths.items()}


def test_a_changed_stored_metric_changes_the_landing_sentence(synthetic_split, tmp_path):
    paths = _store(synthetic_split, tmp_path)
    name = synthetic_split.dataset.name
    before, parts = landing.headline(_runs(synthetic_split, paths), synthetic_split, name,
                                     widths=[16], seeds=2)
    text = " ".join(before)
    assert "{doc}`table1`" in text and "{doc}`ablation`" in text
    share = parts["gaps"][16].set_index("metric").loc["ndcg@10", "closed"]
    assert f"{100 * share:.0f}% at 16 bits".replace("-", "−") in text
    # the protocol's and the serving chapter's findings are there too
    assert "{doc}`protocol`" in text and "{doc}`serving`" in text and len(before) >= 5

    # the item-mean run of both seeds now scores 1.0: it is above every hashing method
    _store_item_mean(paths, tmp_path, 1.0)
    after, _ = landing.headline(_runs(synthetic_split, paths), synthetic_split, name,
                                widths=[16], seeds=2)
    im_before = [s for s in before if "mean training rating" in s][0]
    im_after = [s for s in after if "mean training rating" in s][0]
    assert im_after != im_before
    assert "NDCG@10 1.0000" in im_after and "No personalisation beats every hashing method" \
        in im_after
    # and at 0 it is above none of them
    _store_item_mean(paths, tmp_path, 0.0)
    low, _ = landing.headline(_runs(synthetic_split, paths), synthetic_split, name,
                              widths=[16], seeds=2)
    assert any("Every hashing method beats the ranking without personalisation" in s
               for s in low)


def test_missing_methods_leave_their_sentence_out(synthetic_split, tmp_path):
    paths = {k: v for k, v in _store(synthetic_split, tmp_path).items() if k[0] != "item-mean"}
    found, _ = landing.headline(_runs(synthetic_split, paths), synthetic_split,
                                synthetic_split.dataset.name, widths=[16], seeds=2)
    assert not any("mean training rating" in s for s in found)
    assert found, "the other findings remain"
