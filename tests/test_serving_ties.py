"""Tie rules of served lists (phdlib.serving.ties): every rule against a brute-force
lexsort of (distance, key, id) over all items, ties at the cut included; the id rule
is today's BinaryIndex answer; the codes file's item_stats field (written, checked,
optional); phd recommend --tie-break end to end and its errors; served-order metrics."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from phdlib import codes as C
from phdlib.bench import ties as BT
from phdlib.cli import main
from phdlib.cli.codes import TIE_BREAKS
from phdlib.data import Ratings
from phdlib.evaluation.metrics import mrr, ndcg
from phdlib.serving import codes_file, recommend
from phdlib.serving import ties as T
from phdlib.serving.search import BinaryIndex

N_ITEMS = 400


def _codes(rng, n, m):
    """Codes of few distinct densities: many items share a distance to a user."""
    return C.pack(rng.random((n, m)) < rng.choice([0.1, 0.5, 0.9], (n, 1))).words


def _all_distances(u, i, m, metric):
    """int64 (q, n) distances from unpacked bits (independent of the kernels)."""
    ub = C.unpack(C.PackedCodes(u, m), "bool")
    ib = C.unpack(C.PackedCodes(i, m), "bool")
    x = ub[:, None, :] & ~ib[None, :, :] if metric == "phd" else ub[:, None, :] ^ ib[None, :, :]
    return x.sum(axis=2).astype(np.int64)


def _keys(rng, n):
    """Per rule: (the TieBreak, the brute-force secondary key, smaller first)."""
    pop = rng.integers(0, 4, n).astype(float)  # few values: the key ties too, then id
    mean = np.where(pop > 0, rng.integers(1, 4, n).astype(float), np.nan)
    stats = np.column_stack([pop, mean])
    score = rng.choice([-1.5, 0.0, 2.25, np.nan], n)
    perm = np.random.default_rng(7).permutation(n)
    seeded_key = np.empty(n)
    seeded_key[perm] = np.arange(n)
    return {
        "id": (T.tie_break("id", n), np.zeros(n)),
        "popularity": (T.tie_break("popularity", n, stats=stats), -pop),
        "mean-rating": (T.tie_break("mean-rating", n, stats=stats),
                        np.where(np.isnan(mean), np.inf, -mean)),
        "score": (T.tie_break("score", n, score=score), np.where(np.isnan(score), np.inf, -score)),
        "seeded": (T.tie_break("seeded", n, seed=7), seeded_key),
    }


@pytest.mark.parametrize("m", [8, 32, 64])
@pytest.mark.parametrize("metric", ["phd", "hamming"])
@pytest.mark.parametrize("margin", [1, 64, 10**6])
def test_every_rule_is_the_lexsort_of_distance_key_id_over_all_items(m, metric, margin,
                                                                     monkeypatch):
    rng = np.random.default_rng(m)
    u, i = _codes(rng, 40, m), _codes(rng, N_ITEMS, m)
    index = BinaryIndex(m, metric)
    index.add(i)
    # margin 1: ties past the fetched top-k go through every distance; 10**6: never
    monkeypatch.setattr(T, "_MARGIN", margin)
    scans = []
    real = index.distances
    monkeypatch.setattr(index, "distances", lambda q: scans.append(len(q)) or real(q))
    dist = _all_distances(u, i, m, metric)
    ids = np.arange(N_ITEMS)
    for k in (1, 10, 57, N_ITEMS - 1, N_ITEMS, N_ITEMS + 3):
        kk = min(k, N_ITEMS)
        if kk < N_ITEMS:
            srt = np.sort(dist, axis=1)
            cut_ties = (srt[:, kk - 1] == srt[:, kk]).sum()
            assert cut_ties > 0, (m, metric, k)  # the test holds ties at the cut to get right
        for name, (rule, key) in _keys(rng, N_ITEMS).items():
            d, got = index.search(u, k, tie_break=rule)
            for a in range(u.shape[0]):
                want = np.lexsort((ids, key, dist[a]))[:kk]
                assert np.array_equal(got[a, :kk], want), (m, metric, k, name, a)
                assert np.array_equal(d[a, :kk], dist[a, want]), (m, metric, k, name, a)
            assert (got[:, kk:] == -1).all() and (d[:, kk:] == np.iinfo(np.int32).max).all()
    if margin != 64:  # both paths are tested (64, the default, takes either)
        assert (sum(scans) > 0) == (margin == 1), scans


@pytest.mark.parametrize("m", [8, 64])
def test_the_id_rule_is_todays_answer_exactly(m):
    rng = np.random.default_rng(1)
    u, i = _codes(rng, 70, m), _codes(rng, 900, m)
    index = BinaryIndex(m, "phd")
    index.add(i)
    for k in (1, 10, 900, 950):
        d0, i0 = index.search(u, k)
        for rule in (None, T.tie_break("id", 900), T.TieBreak("id")):
            d1, i1 = index.search(u, k, tie_break=rule)
            assert np.array_equal(d0, d1) and np.array_equal(i0, i1)
            assert d1.dtype == np.int32 and i1.dtype == np.int64


def test_a_rule_changes_which_items_enter_at_the_cut():
    rng = np.random.default_rng(2)
    u, i = _codes(rng, 30, 16), _codes(rng, 300, 16)
    index = BinaryIndex(16, "phd")
    index.add(i)
    pop = np.arange(300, dtype=float)  # the last ids are the most popular
    rule = T.tie_break("popularity", 300, stats=np.column_stack([pop, np.ones(300)]))
    _, by_id = index.search(u, 10)
    _, by_pop = index.search(u, 10, tie_break=rule)
    changed = [a for a in range(30) if set(by_id[a]) != set(by_pop[a])]
    assert changed, "no user's set changed: the test has no tie at the cut"


def test_rules_refuse_what_they_cannot_use():
    with pytest.raises(ValueError, match="tie rule 'nearest' is not one of id, popularity"):
        T.tie_break("nearest", 5)
    with pytest.raises(ValueError, match="'seeded' needs a seed"):
        T.tie_break("seeded", 5)
    with pytest.raises(ValueError, match="'popularity' needs the items' training statistics"):
        T.tie_break("popularity", 5)
    with pytest.raises(ValueError, match=r"expected a 1-d numeric array of 5 values .* \(4,\)"):
        T.tie_break("score", 5, score=np.ones(4))
    index = BinaryIndex(8, "phd")
    index.add(np.zeros((6, 1), np.uint64))
    with pytest.raises(ValueError, match="ranks 5 items but the index holds 6"):
        index.search(np.zeros((1, 1), np.uint64), 2, tie_break=T.tie_break("seeded", 5, seed=0))
    with pytest.raises(TypeError, match="tie_break must be a phdlib.serving.ties.TieBreak"):
        index.search(np.zeros((1, 1), np.uint64), 2, tie_break="popularity")


def test_item_stats_count_and_average_the_ratings():
    item = np.array([0, 2, 2, 2, 3])
    rating = np.array([5.0, 1.0, 2.0, 4.5, 3.0])
    st = T.item_stats(item, rating, 5)
    assert np.array_equal(st[:, 0], [1, 0, 3, 1, 0])
    assert np.allclose(st[[0, 2, 3], 1], [5.0, 7.5 / 3, 3.0])
    assert np.isnan(st[[1, 4], 1]).all()
    with pytest.raises(ValueError, match=r"item rows must lie in 0..4; got 0..5"):
        T.item_stats([0, 5], [1, 1], 5)


def test_recommend_with_exclusions_keeps_the_first_unseen_items_of_the_rule():
    rng = np.random.default_rng(3)
    m, n = 16, 200
    uc, ic = _codes(rng, 8, m), _codes(rng, n, m)
    stats = T.item_stats(rng.integers(0, n, 2000), rng.integers(1, 6, 2000), n)
    c = codes_file.Codes(np.array([f"u{j}" for j in range(8)]), np.arange(100, 100 + n),
                         uc, ic, m, "phd", {}, stats)
    rule = recommend.tie_rule(c, "popularity")
    seen = {f"u{j}": list(range(100, 100 + n, 3)) for j in range(8)}
    recs = recommend.recommend(c, list(seen), k=10, exclude=seen, tie_break=rule)
    dist = _all_distances(uc, ic, m, "phd")
    for a, r in enumerate(recs):
        ok = np.flatnonzero(np.arange(n) % 3 != 0)
        want = ok[np.lexsort((ok, -stats[ok, 0], dist[a, ok]))][:10]
        assert r["items"] == (want + 100).tolist() and r["distances"] == dist[a, want].tolist()


def test_the_command_lines_choices_are_the_rules():
    assert TIE_BREAKS == T.RULES


# ---------------------------------------------------------------- the codes file's item_stats
@pytest.fixture()
def with_stats(tmp_path):
    rng = np.random.default_rng(0)
    stats = T.item_stats(np.array([0, 0, 1, 3]), np.array([4.0, 5.0, 3.0, 1.0]), 4)
    prov = {"method": "vh-phd", "columns": {"user": "u", "item": "i"},
            "item_stats": {"columns": list(T.STAT_COLUMNS), "split": "train",
                           "split_fingerprint": "ab" * 8, "ratings": 4,
                           "how": dict(T.ITEM_STATS_HOW)}}
    c = codes_file.Codes(np.array(["a", "b", "c"]), np.array([10, 20, 30, 40]),
                         C.pack(rng.random((3, 8)) < 0.5).words,
                         C.pack(rng.random((4, 8)) < 0.5).words, 8, "phd", prov, stats)
    return codes_file.save_codes(c, tmp_path / "stats.npz")


def _forge(src, dst, checksum=True, **changes):
    with np.load(src) as z:
        f = dict(z)
    for key, v in changes.items():
        if v is None:
            f.pop(key)
        else:
            f[key] = v
    if checksum:
        f["sha256"] = np.array(codes_file._digest(f))
    np.savez(dst, **f)
    return str(dst)


def test_item_stats_round_trip_and_an_old_file_still_loads(with_stats, tmp_path):
    back = codes_file.load_codes(with_stats)
    assert np.array_equal(back.item_stat("popularity"), [2, 1, 0, 1])
    assert np.allclose(back.item_stat("mean_rating")[[0, 1, 3]], [4.5, 3.0, 1.0])
    assert np.isnan(back.item_stat("mean_rating")[2])
    with np.load(with_stats) as z:
        prov = json.loads(str(z["provenance"]))
    del prov["item_stats"]
    old = _forge(with_stats, tmp_path / "old.npz", item_stats=None,
                 provenance=np.array(json.dumps(prov)))
    plain = codes_file.load_codes(old)
    assert plain.item_stats is None
    with pytest.raises(ValueError, match=rf"{old}: no field 'item_stats' \(the items' popularity"):
        plain.item_stat("popularity")


def _stats_prov(src, **changes):
    with np.load(src) as z:
        prov = json.loads(str(z["provenance"]))
    prov["item_stats"].update(changes)
    return np.array(json.dumps(prov))


@pytest.mark.parametrize("case,message", [
    ("negative count", "gives item row 0 a popularity of -2.0; expected a whole number"),
    ("fractional count", "gives item row 0 a popularity of 2.5"),
    ("count total", "counts 5 training ratings but its provenance records 4"),
    ("mean of an unrated item", "gives item row 2 (0 ratings) a mean rating of 3.0"),
    ("no mean of a rated item", "gives item row 0 (2 ratings) a mean rating of nan"),
    ("wrong shape", "field 'item_stats' is float64 (4, 1); expected float64 (4, 2)"),
    ("wrong dtype", "field 'item_stats' is float32 (4, 2)"),
    ("no provenance", "field 'item_stats' has no provenance"),
    ("provenance without the field", "the provenance describes 'item_stats' but the file has"),
    ("wrong columns", "provenance field 'item_stats.columns' is [\"mean_rating\", \"popularity\"]"),
    ("ratings as text", "provenance field 'item_stats.ratings' is \"4\"; expected an integer"),
    ("changed without checksum", "does not match its sha256 field"),
])
def test_a_forged_item_stats_is_refused_naming_the_field(with_stats, tmp_path, case, message):
    with np.load(with_stats) as z:
        st, prov = z["item_stats"].copy(), json.loads(str(z["provenance"]))
    changes, checksum = {}, True
    if case == "negative count":
        st[0, 0] = -2
    elif case == "fractional count":
        st[0, 0] = 2.5
    elif case == "count total":
        st[2, 0], st[2, 1] = 1, 2.0
    elif case == "mean of an unrated item":
        st[2, 1] = 3.0
    elif case == "no mean of a rated item":
        st[0, 1] = np.nan
    elif case == "wrong shape":
        st = st[:, :1].copy()
    elif case == "wrong dtype":
        st = st.astype(np.float32)
    elif case == "no provenance":
        del prov["item_stats"]
        changes["provenance"] = np.array(json.dumps(prov))
    elif case == "provenance without the field":
        st = None
    elif case == "wrong columns":
        changes["provenance"] = _stats_prov(with_stats, columns=["mean_rating", "popularity"])
    elif case == "ratings as text":
        changes["provenance"] = _stats_prov(with_stats, ratings="4")
    elif case == "changed without checksum":
        st[1, 1] = 4.0
        checksum = False
    path = _forge(with_stats, tmp_path / "forged.npz", checksum=checksum, item_stats=st, **changes)
    with pytest.raises(codes_file.CodesFileError) as info:
        codes_file.load_codes(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


# ---------------------------------------------------------------- end to end through the CLI
def _cli(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny ratings file trained with vh-phd (32 bits) and exported: (codes path, csv,
    run path, results dir)."""
    import contextlib
    import io

    d = tmp_path_factory.mktemp("ties")
    rng = np.random.default_rng(0)
    n = 3000
    u, i = rng.integers(0, 60, n), rng.integers(0, 50, n) ** 2 // 50  # skewed popularity
    pd.DataFrame({"who": [f"u{x}" for x in u], "what": i, "stars": rng.integers(1, 6, n)}) \
        .to_csv(d / "tiny.csv", index=False)
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setenv("PHD_RESULTS_DIR", str(d / "results"))
        assert main(["train", "--method", "vh-phd", "--ratings", str(d / "tiny.csv"),
                     "--columns", "user=who,item=what,rating=stars", "--scale", "1,5",
                     "--bits", "32", "--set", "tune=false", "--set", "max_iterations=30",
                     "--set", "min_iterations=30", "--json"]) == 0
        run = json.loads(out.getvalue())["path"]
        assert main(["export", "--run", run, "--out", str(d / "codes.npz")]) == 0
    return d / "codes.npz", d / "tiny.csv", run, d / "results"


def _train_popularity(codes):
    """Each item's number of training ratings, rebuilt here from the file: the split the
    run was trained on (phdlib.data.reload_split), counted with pandas."""
    from phdlib import data

    split = data.reload_split(codes.provenance["dataset"], codes.provenance)
    tr = pd.DataFrame({"item": split.train.item, "rating": split.train.rating.astype(float)})
    by = tr.groupby("item")["rating"].agg(["size", "mean"]).reindex(range(len(codes.item_ids)))
    return by["size"].fillna(0).to_numpy(float), by["mean"].to_numpy(float)


def test_train_export_recommend_by_popularity_is_the_brute_force_order(exported, capsys):
    path, _, _, _ = exported
    codes = codes_file.load_codes(path)
    pop, mean = _train_popularity(codes)
    assert np.array_equal(codes.item_stat("popularity"), pop)
    assert np.allclose(codes.item_stat("mean_rating"), mean, equal_nan=True, rtol=0, atol=1e-12)
    users = [str(x) for x in codes.user_ids[:15]]
    got = json.loads(_cli(capsys, ["recommend", "--codes", str(path), "--k", "10", "--json",
                                   "--tie-break", "popularity",
                                   *sum((["--user", x] for x in users), [])]).out)
    plain = json.loads(_cli(capsys, ["recommend", "--codes", str(path), "--k", "10", "--json",
                                     *sum((["--user", x] for x in users), [])]).out)
    assert set(got) == set(plain) and [set(r) for r in got["users"]] == \
        [set(r) for r in plain["users"]]  # the JSON's shape is unchanged
    dist = _all_distances(codes.user_codes[codes.user_rows(users)], codes.item_codes, 32, "phd")
    ids = np.arange(len(codes.item_ids))
    differs = 0
    for a, r in enumerate(got["users"]):
        want = np.lexsort((ids, -pop, dist[a]))[:10]
        assert r["user"] == users[a]
        assert r["items"] == codes.item_ids[want].tolist()
        assert r["distances"] == dist[a, want].tolist()
        differs += r["items"] != plain["users"][a]["items"]
    assert differs, "popularity served the id order to every user: nothing was tested"


def test_seeded_and_score_rules_from_the_command_line(exported, capsys, tmp_path):
    path, _, _, _ = exported
    codes = codes_file.load_codes(path)
    user = str(codes.user_ids[3])
    dist = _all_distances(codes.user_codes[codes.user_rows([user])], codes.item_codes, 32,
                          "phd")[0]
    ids = np.arange(len(codes.item_ids))
    got = json.loads(_cli(capsys, ["recommend", "--codes", str(path), "--user", user, "--json",
                                   "--tie-break", "seeded", "--seed", "5"]).out)["users"][0]
    key = np.empty(len(ids))
    key[np.random.default_rng(5).permutation(len(ids))] = ids
    assert got["items"] == codes.item_ids[np.lexsort((ids, key, dist))[:10]].tolist()
    score = np.random.default_rng(1).integers(0, 3, len(ids)).astype(float)
    listed = ids[::2]  # the other items have no score: last among their ties
    (tmp_path / "s.csv").write_text("item,score\n" + "".join(
        f"{codes.item_ids[j]},{score[j]}\n" for j in listed))
    got = json.loads(_cli(capsys, ["recommend", "--codes", str(path), "--user", user, "--json",
                                   "--tie-break", "score", "--scores",
                                   str(tmp_path / "s.csv")]).out)["users"][0]
    key = np.where(ids % 2 == 0, -score, np.inf)
    assert got["items"] == codes.item_ids[np.lexsort((ids, key, dist))[:10]].tolist()


def _fails(capsys, argv, message):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("phd: error: "), err
    assert message in err, err
    return err


def test_recommend_errors_name_the_file_the_field_and_the_option(exported, capsys, tmp_path):
    path, _, _, _ = exported
    codes = codes_file.load_codes(path)
    user = str(codes.user_ids[0])
    base = ["recommend", "--codes", str(path), "--user", user]
    _fails(capsys, base + ["--tie-break", "seeded"], "--tie-break seeded needs --seed N")
    _fails(capsys, base + ["--seed", "3"], "--seed goes with --tie-break seeded (got --tie-break id)")
    _fails(capsys, base + ["--tie-break", "score"], "--tie-break score needs --scores FILE")
    (tmp_path / "bad.csv").write_text("item,score\nno-such-item,1\n")
    _fails(capsys, base + ["--tie-break", "score", "--scores", str(tmp_path / "bad.csv")],
           f"--scores {tmp_path / 'bad.csv'}: item id 'no-such-item' is not in the codes")
    (tmp_path / "nan.csv").write_text(f"item,score\n{codes.item_ids[0]},many\n")
    _fails(capsys, base + ["--tie-break", "score", "--scores", str(tmp_path / "nan.csv")],
           "line 2: score 'many' is not a finite number")
    with pytest.raises(SystemExit) as info:
        main(base + ["--tie-break", "nearest"])
    assert info.value.code == 2 and "invalid choice: 'nearest'" in capsys.readouterr().err
    with np.load(path) as z:
        f = dict(z)
    prov = json.loads(str(f["provenance"]))
    del prov["item_stats"]
    old = _forge(path, tmp_path / "old.npz", item_stats=None,
                 provenance=np.array(json.dumps(prov)))
    for rule, column in (("popularity", "popularity"), ("mean-rating", "mean_rating")):
        _fails(capsys, ["recommend", "--codes", old, "--user", user, "--tie-break", rule],
               f"phd: error: {old}: no field 'item_stats' (the items' {column} from the "
               f"training ratings)")
    # the old file serves the id rule as before
    _cli(capsys, ["recommend", "--codes", old, "--user", user, "--json"])


def test_of_run_times_one_seeded_permutation_and_scores_every_rule(exported, monkeypatch):
    """A stored run's served rules: every seed's order is scored, and only the first seeded
    permutation is timed besides ``id``, ``popularity`` and ``mean-rating``."""
    _, _, run, store = exported
    monkeypatch.setenv("PHD_RESULTS_DIR", str(store))
    searched = []
    monkeypatch.setattr(BT, "_time_search",
                        lambda index, q, k, rule, repeats: searched.append(rule) or 1.0)
    table = BT.of_run(run, k=10, seeds=(s for s in (3, 4, 5))).set_index("rule")
    assert list(table.index) == ["expected", "id", "popularity", "mean-rating", "seeded:3",
                                 "seeded:4", "seeded:5"]
    assert len(searched) == 4
    timed = table["seconds_per_query"].notna()
    assert timed[timed].index.tolist() == ["id", "popularity", "mean-rating", "seeded:3"]
    assert table[["ndcg@10", "mrr"]].notna().all().all()


def test_export_without_the_training_file_warns_and_writes_no_item_stats(exported, capsys,
                                                                          tmp_path, monkeypatch):
    path, csv, run, store = exported
    monkeypatch.setenv("PHD_RESULTS_DIR", str(store))
    moved = csv.with_name("moved.csv")
    shutil.move(csv, moved)
    try:
        out = tmp_path / "nostats.npz"
        res = _cli(capsys, ["export", "--run", run, "--out", str(out)])
        assert "phd: warning: " in res.err and "no item_stats written" in res.err
        assert codes_file.load_codes(out).item_stats is None
    finally:
        shutil.move(moved, csv)


# ---------------------------------------------------------------- served-order metrics
def test_served_order_metrics_are_the_per_user_metrics_of_that_order():
    rng = np.random.default_rng(4)
    m, n_users, n_items = 8, 30, 60
    uc, ic = _codes(rng, n_users, m), _codes(rng, n_items, m)
    user = np.repeat(np.arange(n_users), 12)
    item = np.concatenate([rng.choice(n_items, 12, replace=False) for _ in range(n_users)])
    rating = rng.integers(1, 6, user.size).astype(np.float32)
    test = Ratings(user, item, rating)
    stats = T.item_stats(rng.integers(0, n_items, 500), rng.integers(1, 6, 500), n_items)
    rules = {"id": T.tie_break("id", n_items),
             "popularity": T.tie_break("popularity", n_items, stats=stats)}
    table = BT.served_effectiveness(uc, ic, m, "phd", test, rules, k=10, repeats=1)
    assert list(table.rule) == ["expected", "id", "popularity"]
    dist = _all_distances(uc, ic, m, "phd")
    for name, key in (("id", np.zeros(n_items)), ("popularity", -stats[:, 0])):
        nd, rr = [], []
        for a in range(n_users):
            its, rs = item[user == a], rating[user == a].astype(float)
            o = np.lexsort((its, key[its], dist[a, its]))
            pos = np.empty(len(o))
            pos[o] = np.arange(len(o))  # the served position as a distinct dissimilarity
            nd.append(ndcg(rs, pos, 10, ties="input"))
            rr.append(mrr(rs, pos, ties="input"))
        row = table.set_index("rule").loc[name]
        assert row["ndcg@10"] == pytest.approx(np.mean(nd), abs=1e-12)
        assert row["mrr"] == pytest.approx(np.mean(rr), abs=1e-12)
    exp = table.set_index("rule").loc["expected"]
    assert exp["mrr"] == pytest.approx(np.mean([mrr(rating[user == a].astype(float),
                                                    dist[a, item[user == a]])
                                                for a in range(n_users)]), abs=1e-12)
    assert table.set_index("rule").loc["id", "extra_seconds_per_query"] == 0
    assert (table.set_index("rule").loc[["id", "popularity"], "seconds_per_query"] > 0).all()
    assert (table.timed_queries.dropna() == n_users).all()
    # the timing searches a subset of the users; the metrics are every user's still
    searched = []
    real = BT._time_search
    try:
        BT._time_search = lambda index, q, k, rule, repeats: searched.append(q.copy()) or 1.0
        few = BT.served_effectiveness(uc, ic, m, "phd", test, rules, k=10, time_queries=7)
    finally:
        BT._time_search = real
    assert [len(q) for q in searched] == [7, 7]
    assert np.array_equal(searched[0], uc[BT.timed_queries(n_users, 7)])
    assert few[["ndcg@10", "mrr"]].equals(table[["ndcg@10", "mrr"]])
    assert (few.timed_queries.dropna() == 7).all()
    # only the rules named in ``timed`` are searched (and ``id``, the baseline)
    searched.clear()
    try:
        BT._time_search = lambda index, q, k, rule, repeats: searched.append(q.copy()) or 1.0
        some = BT.served_effectiveness(uc, ic, m, "phd", test, rules, k=10, timed=[])
    finally:
        BT._time_search = real
    assert len(searched) == 1
    row = some.set_index("rule")
    assert row.loc["id", "timed_queries"] == n_users
    assert row.loc["popularity", ["seconds_per_query", "extra_seconds_per_query",
                                  "timed_queries"]].isna().all()
    assert some[["ndcg@10", "mrr"]].equals(table[["ndcg@10", "mrr"]])
    with pytest.raises(ValueError, match="not the string"):
        BT.served_effectiveness(uc, ic, m, "phd", test, rules, timed="popularity")
    with pytest.raises(ValueError, match="timed names rules that are not among the rules"):
        BT.served_effectiveness(uc, ic, m, "phd", test, rules, timed=["seeded:0"])
    assert BT.timed_queries(5, 7).tolist() == [0, 1, 2, 3, 4]
    assert BT.timed_queries(10, 3).tolist() == [0, 4, 9]
    with pytest.raises(ValueError, match="time_queries must be at least 1"):
        BT.timed_queries(10, 0)


@pytest.mark.parametrize("m", [8, 32, 64, 100])
@pytest.mark.parametrize("metric", ["phd", "hamming"])
def test_exact_engines_break_ties_by_the_rule_as_binaryindex_does(m, metric, tmp_path):
    """faiss flat, Milvus Lite, usearch's exhaustive mode and the IVF probing every list, each
    rule: BinaryIndex's answer."""
    import warnings

    from phdlib.serving import engines
    from phdlib.serving.ivf import IVFIndex
    from phdlib.serving.usearch_engine import USearchIndex

    rng = np.random.default_rng(11)
    u = C.pack(rng.random((20, m)) < 0.5).words
    i = C.pack(rng.random((900, m)) < 0.5).words
    n = len(i)
    stats = np.column_stack([rng.integers(0, 50, n), rng.uniform(1, 5, n)]).astype(float)
    rules = [T.tie_break("popularity", n, stats=stats), T.tie_break("mean-rating", n, stats=stats),
             T.tie_break("seeded", n, seed=3)]
    ref = BinaryIndex(m, metric)
    ref.add(i)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = IVFIndex(m, metric, nlist=16, seed=0)
        every.train(i)
        every.nprobe = 16  # every list probed: exact
        indexes = [engines.FaissIndex(m, metric, "flat"), USearchIndex(m, metric, exact=True),
                   every,
                   engines.MilvusIndex(m, str(tmp_path / "t.db"), collection=f"t{m}{metric}",
                                       metric=metric)]
        for index in indexes:
            index.add(i)
            for k in (1, 10):
                d0, i0 = ref.search(u, k)
                assert (d0[:, :-1] == d0[:, 1:]).any() or k == 1
                for rule in rules:
                    want = ref.search(u, k, tie_break=rule)
                    got = index.search(u, k, tie_break=rule)
                    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1]), \
                        (type(index).__name__, rule.rule, k)
                    if rule.rule == "seeded":
                        assert not np.array_equal(got[1], i0) or k == 1  # the rule changed them
        indexes[-1].client.close()
