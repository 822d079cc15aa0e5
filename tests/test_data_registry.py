"""The dataset registry (:mod:`phdlib.data.registry`): every name is a kind, the keys and
fingerprints of every dataset are those the string-matching loader computed, and nothing
outside the registry tells datasets apart by name."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import phdlib
from phdlib import data, paper
from phdlib.bench import train as bench_train

#: ``load_split(name, 0).fingerprint`` as computed before the registry existed (the
#: string-matching ``load_dataset`` of commit 0cfbde4). Stored runs are keyed by it:
#: a change here orphans every stored run of the dataset.
PINNED = {
    ("ml-100k", ()): "bf35e6886ebb94e6",
    ("ml-100k", (("filtering", "until_stable"), ("min_ratings", 5))): "7eb524dbdb354e5d",
    ("synthetic", ()): "da62b10dfb448562",
}


@pytest.mark.parametrize("name,options", list(PINNED))
def test_split_fingerprints_are_those_of_the_loader_before_the_registry(name, options):
    if not data.available(name):
        pytest.skip(f"{name} is not on this machine (PHD_DATA_DIR)")
    got = data.load_split(name, 0, **dict(options)).fingerprint
    assert got == PINNED[name, options], f"{name} {dict(options)}: {got}, pinned {PINNED[name, options]}"


def test_a_small_synthetic_split_keeps_its_fingerprint_without_the_cache():
    opts = dict(n_users=80, n_items=50, density=0.3, bits=32, noise=0.5, data_seed=0)
    assert data.load_split("synthetic", 1, cache=False, **opts).fingerprint == "6a12d614cce4d19b"


def test_every_name_is_a_kind_and_the_kinds_say_what_they_are():
    n = len(data.SOURCES)
    assert data.names()[:n] == sorted(data.SOURCES)
    assert data.names()[n:n + 4] == ["synthetic", "synthetic-amazon", "synthetic-ml-10m",
                                     "synthetic-yelp"]
    for name in data.names():
        kind = data.get(name)
        assert kind.name == name and name in kind.describe()
        assert data.is_synthetic(name) == name.startswith("synthetic"), name
    assert not data.is_synthetic("nosuch") and not data.is_synthetic("ml-1m")
    with pytest.raises(KeyError, match="unknown dataset 'nosuch'; known: amazon"):
        data.get("nosuch")
    with pytest.raises(TypeError, match="expected a phdlib.data.DatasetKind"):
        data.register("ml-1m")


def test_shapes_come_from_the_papers_table_of_sizes():
    for shape, dataset in (("synthetic-yelp", "yelp"), ("synthetic-amazon", "amazon"),
                           ("synthetic-ml-10m", "ml-10m")):
        s = data.SCALE_SHAPES[shape]
        assert (s["n_users"], s["n_items"], s["ratings"]) == paper.dataset_shape(dataset)
    assert data.SCALE_SHAPES["synthetic-amazon"] == dict(
        n_users=158_650, n_items=128_939, ratings=4_701_968, rating_scale=(1.0, 5.0))
    assert data.scale_options("synthetic-ml-10m")["density"] == 9_995_471 / (69_878 * 9_708)
    assert bench_train.SHAPES == {"ml-1m": (6040, 3260, 1_000_209),
                                  "ml-10m": (69_878, 9_708, 9_995_471),
                                  "amazon": (158_650, 128_939, 4_701_968)}
    with pytest.raises(KeyError, match="reports no sizes for dataset 'ml-100k'"):
        paper.dataset_shape("ml-100k")
    with pytest.raises(KeyError, match="not a fixed synthetic shape"):
        data.scale_options("synthetic")


def test_a_real_dataset_is_rebuilt_from_its_provenance_and_a_changed_one_refused():
    if not data.available("ml-100k"):
        pytest.skip("ml-100k is not on this machine (PHD_DATA_DIR)")
    split = data.load_split("ml-100k", 2, min_ratings=5)
    prov = data.provenance(split)
    assert data.reload_split("ml-100k", prov).fingerprint == split.fingerprint
    assert data.reload(prov).fingerprint == split.dataset.fingerprint
    wrong = {**prov, "dataset_fingerprint": "0" * 64}
    with pytest.raises(data.FingerprintMismatch, match=f"{split.dataset.fingerprint}.*0000"):
        data.reload(wrong)
    with pytest.raises(data.FingerprintMismatch, match=f"{split.fingerprint}.*{'1' * 16}"):
        data.reload_split("ml-100k", {**prov, "split_fingerprint": "1" * 16})


def test_a_users_file_is_rebuilt_from_the_path_its_provenance_records(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("u;i;r\n" + "".join(f"{u};{i};{1 + (u * i) % 5}\n" for u in range(6)
                                     for i in range(5)))
    split = data.split_dataset(data.load_file(f, "user=u,item=i,rating=r", "1,5", min_ratings=1,
                                              sep=";"), 3)
    prov = data.provenance(split)
    assert prov["path"] == str(f.resolve()) and prov["sep"] == ";"
    assert data.kind_of(prov["dataset"], prov) is data.OWN_FILE
    again = data.reload_split(prov["dataset"], prov)
    assert again.fingerprint == split.fingerprint and again.dataset.name == "file-r"
    f.write_text(f.read_text().replace("0;0;1", "0;0;2"))
    with pytest.raises(data.FingerprintMismatch, match=split.dataset.fingerprint):
        data.reload(prov)


#: What used to choose a dataset by its name; only the registry may do it now.
NAME_MATCHING = re.compile(r'== ?SYNTHETIC|in SCALE_SHAPES|startswith\(["\']synthetic|'
                           r'== ?["\']synthetic["\']')


def test_no_module_but_the_registry_chooses_a_dataset_by_its_name():
    root = Path(phdlib.__file__).parent
    found = [f"{p.relative_to(root)}:{n}: {line.strip()}"
             for p in sorted(root.rglob("*.py")) if p.name != "registry.py"
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if NAME_MATCHING.search(line)]
    assert not found, "datasets chosen by name outside phdlib/data/registry.py:\n" + \
        "\n".join(found)


def test_the_name_matching_pattern_finds_what_it_forbids():
    for line in ('if name == SYNTHETIC:', 'if name in SCALE_SHAPES:',
                 'name.startswith("synthetic")', "if d == 'synthetic':"):
        assert NAME_MATCHING.search(line), line
    assert not NAME_MATCHING.search("data.is_synthetic(name)")
