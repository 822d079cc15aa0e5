"""DCF_PHD as a method: declarations, monotone discrete rounds, ±1 codes ranked by PHD, the store."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib import codes as C
from phdlib import methods, names, results
from phdlib.experiments import training
from phdlib.methods import dcf, dcf_phd, discrete, discrete_phd

SMALL = {"tune": False, "max_iterations": 15, "init_max_iterations": 3}


@pytest.fixture
def registered():
    """DCF_PHD registered for one test (it is not in :data:`phdlib.names.METHODS` yet)."""
    m = methods.register(dcf_phd.DCF_PHD)
    try:
        yield m
    finally:
        methods.unregister(m.name)


def test_declared_like_dcf_but_ranking_by_phd():
    m = dcf_phd.DCF_PHD
    assert (m.name, m.label, m.ranks_by, m.learns_codes, m.in_paper) == \
        ("dcf-phd", "DCF_PHD", "phd", True, False)
    assert m.quick == dcf.DCF.quick and m.config_spec is dcf.DCF.config_spec and m.color
    for ds, bits in (("ml-1m", 32), ("ml-1m", 64), ("synthetic", 8)):
        cfg, ref = m.defaults(ds, bits), dcf.DCF.defaults(ds, bits)
        assert set(cfg) == set(ref) == set(m.config_spec.keys), f"{ds}/{bits}: keys differ from DCF's"
        assert m.grid(cfg, bits) == dcf.DCF.grid(ref, bits), f"{ds}/{bits}: grid differs from DCF's"
        assert (cfg["alpha"], cfg["impl"]) == (dcf_phd.ALPHA, dcf_phd.IMPL)
    assert "dcf-phd" not in names.METHODS and "dcf-phd" not in methods.names(), \
        "DCF_PHD must not be in the registry before its chapter exists"


def test_phd_objective_never_increases_and_is_the_reference_objective(synthetic_split):
    sp, ds = synthetic_split, synthetic_split.dataset
    cfg = {**dcf_phd.DCF_PHD.defaults(ds.name, 16), **SMALL}
    model, info = dcf_phd.fit_point(sp, 16, 0, cfg)
    obj = np.array([row["objective"] for row in model.log])
    assert len(obj) >= 3, f"only {len(obj)} logged rounds"
    steps = np.diff(obj)
    assert np.all(steps <= 1e-9 * np.abs(obj).max()), f"objective rose: {obj}"
    assert obj[-1] < obj[0], f"objective did not fall: {obj}"
    for A in (model.B, model.D):
        assert A.dtype == np.int8 and set(np.unique(A)) <= {-1, 1}, f"codes not ±1: {np.unique(A)}"
    # the logged objective is the definition's, scored by PHD (and not by the inner product)
    g = discrete.RatingGraph.from_ratings(sp.train, ds.n_users, ds.n_items)
    target = discrete.scale_ratings(g.rating, *ds.rating_scale, 16)
    user = np.repeat(np.arange(ds.n_users), np.diff(g.u_indptr))
    a = cfg["alpha"]
    ref = discrete_phd.objective(user, g.u_items, target, model.B, model.D, model.X[0], model.Y[0],
                                 a, a, "phd")
    assert ref == pytest.approx(obj[-1], rel=1e-10)
    ham = discrete_phd.objective(user, g.u_items, target, model.B, model.D, model.X[0],
                                 model.Y[0], a, a, "hamming")
    assert ham != pytest.approx(obj[-1], rel=1e-6), "the logged objective is Hamming's"
    assert info["iterations"] == len(obj) - 1


def test_trained_through_the_store_ranks_by_phd_and_is_found_again(registered, synthetic_split,
                                                                    tmp_path):
    sp = synthetic_split
    run = training.run("dcf-phd", sp, 32, 0, SMALL, root=tmp_path, progress=False)
    assert run.method == "dcf-phd" and run.config["impl"] == dcf_phd.IMPL
    assert run.arrays["user_codes"].dtype == np.uint64
    assert run.arrays["user_codes"].shape == (sp.dataset.n_users, 1)
    # the stored codes are the block model's, and the run scores pairs by PHD
    cfg = {**dcf_phd.DCF_PHD.defaults(sp.dataset.name, 32), **SMALL}
    model, _ = dcf_phd.fit_point(sp, 32, 0, cfg)
    np.testing.assert_array_equal(run.arrays["user_codes"], dcf.packed(model)["user_codes"])
    np.testing.assert_array_equal(run.arrays["item_codes"], dcf.packed(model)["item_codes"])
    fitted = dcf_phd.DCF_PHD.fit(sp, 32, 0, cfg)
    assert fitted.ranks_by == "phd"
    np.testing.assert_array_equal(fitted.table(np.arange(5), np.arange(7)),
                                  C.phd_reference(model.B[:5], model.D[:7]))
    # found again under the same key
    found = results.find("dcf-phd", sp.dataset.name, 32, 0, run.config, sp.fingerprint,
                         root=tmp_path)
    assert found is not None and found.key == run.key, "the stored run is not found again"
    again = training.run("dcf-phd", sp, 32, 0, SMALL, root=tmp_path, progress=False)
    assert again.path == found.path
    # validation NDCG@10 on planted-PHD data is computed (no winner asserted)
    v = run.metrics["valid_ndcg@10"]
    assert 0.0 < v <= 1.0, f"valid_ndcg@10 = {v}"
    ham = training.run("dcf", sp, 32, 0, SMALL, root=tmp_path, progress=False)
    print(f"\nsynthetic (planted PHD), 32 bits: valid NDCG@10 DCF_PHD {v:.4f}, "
          f"DCF {ham.metrics['valid_ndcg@10']:.4f}; test DCF_PHD {run.metrics['ndcg@10']:.4f}, "
          f"DCF {ham.metrics['ndcg@10']:.4f}")
