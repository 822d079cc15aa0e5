"""DCF_PHD and DCF+bias as methods: declarations, monotone discrete rounds, the offset's
closed form, ±1 codes ranked by their distance, the store."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib import codes as C
from phdlib import methods, names, results
from phdlib.experiments import training
from phdlib.methods import dcf, dcf_bias, dcf_phd, discrete, discrete_phd

SMALL = {"tune": False, "max_iterations": 15, "init_max_iterations": 3}


@pytest.mark.parametrize("module, name, ranks_by", [(dcf_phd, "dcf-phd", "phd"),
                                                   (dcf_bias, "dcf-bias", "hamming")])
def test_declared_like_dcf_and_registered(module, name, ranks_by):
    m = methods.get(name)
    assert m is getattr(module, "DCF_PHD" if name == "dcf-phd" else "DCF_BIAS")
    assert (m.name, m.ranks_by, m.learns_codes, m.in_paper) == (name, ranks_by, True, False)
    assert m.quick == dcf.DCF.quick and m.config_spec is dcf.DCF.config_spec and m.color
    assert m.color not in {methods.get(o).color for o in methods.names() if o != name}
    assert name in names.METHODS and list(names.METHODS).index(name) > list(names.METHODS).index("mf")
    for ds, bits in (("ml-1m", 32), ("ml-1m", 64), ("synthetic", 8)):
        cfg, ref = m.defaults(ds, bits), dcf.DCF.defaults(ds, bits)
        assert set(cfg) == set(ref) == set(m.config_spec.keys), f"{ds}/{bits}: keys differ from DCF's"
        assert m.grid(cfg, bits) == dcf.DCF.grid(ref, bits), f"{ds}/{bits}: grid differs from DCF's"
        assert (cfg["alpha"], cfg["impl"]) == (module.ALPHA, module.IMPL)


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


def test_trained_through_the_store_ranks_by_phd_and_is_found_again(synthetic_split, tmp_path):
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


def test_dcf_bias_offsets_are_the_mean_residual_and_the_objective_never_rises(synthetic_split):
    sp, ds = synthetic_split, synthetic_split.dataset
    cfg = {**dcf_bias.DCF_BIAS.defaults(ds.name, 16), **SMALL}
    model, info = dcf_bias.fit_point(sp, 16, 0, cfg)
    obj = np.array([row["objective"] for row in model.log])
    assert len(obj) >= 3 and np.all(np.diff(obj) <= 1e-9 * np.abs(obj).max()), obj
    g = discrete.RatingGraph.from_ratings(sp.train, ds.n_users, ds.n_items)
    target = discrete.scale_ratings(g.rating, *ds.rating_scale, 16)
    user = np.repeat(np.arange(ds.n_users), np.diff(g.u_indptr))
    assert model.offset.shape == (ds.n_users,) and model.offset.dtype == np.float64
    # the offsets are not constant (a user's mean rating varies) ...
    assert np.ptp(model.offset) > 0.5, np.ptp(model.offset)
    # ... and each is, brute force, the minimiser of its user's squared error given the codes
    # of the round it was set in: perturbing it never lowers the loss with those codes
    # (the last round changed the codes after, so compare with the offset refitted on them)
    score = np.einsum("ij,ij->i", model.B[user].astype(float), model.D[g.u_items].astype(float))
    fresh = discrete.user_offsets(g, target - score)
    for u in range(5):
        rows = user == u
        if not rows.any():
            continue
        mean = float(np.mean(target[rows] - score[rows]))
        assert fresh[u] == pytest.approx(mean, abs=1e-12)
        loss = lambda o: float(np.sum((target[rows] - score[rows] - o) ** 2))  # noqa: E731
        assert loss(fresh[u]) <= min(loss(fresh[u] + 1e-3), loss(fresh[u] - 1e-3))
    # the logged objective includes the offsets of the last round
    a = cfg["alpha"]
    ref = discrete_phd.objective(user, g.u_items, target - model.offset[user], model.B, model.D,
                                 model.X[0], model.Y[0], a, a, "hamming")
    assert ref == pytest.approx(obj[-1], rel=1e-10)
    assert info["iterations"] == len(obj) - 1
    fitted = dcf_bias.DCF_BIAS.fit(sp, 16, 0, cfg)
    assert fitted.ranks_by == "hamming"
    np.testing.assert_array_equal(fitted.table(np.arange(4), np.arange(6)),
                                  C.hamming_reference(model.B[:4], model.D[:6]))


def test_user_offsets_handle_users_without_ratings():
    g = discrete.RatingGraph.from_arrays(np.array([0, 0, 2]), np.array([0, 1, 1]),
                                         np.array([1.0, 3.0, 5.0]), 4, 2)
    np.testing.assert_array_equal(discrete.user_offsets(g, np.array([1.0, 3.0, 5.0])),
                                  [2.0, 0.0, 5.0, 0.0])
