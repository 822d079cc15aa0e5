"""One ``Distance`` concept (:mod:`phdlib.codes`): the registry, the lookup, each
distance's scoring against the plain NumPy references, and that no other module of
phdlib keeps its own list of the distances."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import phdlib
from phdlib.studies import ablation
from phdlib import codes as C, methods
from phdlib.codes import padding
from phdlib.serving import search
from phdlib.kernels import bits as KB
from phdlib.kernels import search as KS

ROOT = Path(phdlib.__file__).parent
WIDTHS = (1, 7, 64, 100)


def test_the_registry_names_each_distance_once_in_the_order_shown():
    assert list(C.DISTANCES) == ["hamming", "phd"] and C.DISTANCE_NAMES == ("hamming", "phd")
    assert C.DISTANCES["hamming"] is C.HAMMING and C.DISTANCES["phd"] is C.PHD
    assert all(d.name == n and str(d) == n for n, d in C.DISTANCES.items())
    assert C.HAMMING.symmetric and not C.PHD.symmetric
    assert not C.HAMMING.items_negated and C.PHD.items_negated
    assert (C.HAMMING.pair_op, C.PHD.pair_op) == (KB.HAMMING, KB.AND)
    with pytest.raises(TypeError):
        C.DISTANCES["cosine"] = C.HAMMING  # read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        C.PHD.symmetric = True


def test_ranking_kinds_are_the_distances_and_a_score():
    assert C.RANKS == ("hamming", "phd", "score")
    assert methods.RANKS is C.RANKS
    assert "score" not in C.DISTANCES


def test_old_names_ask_the_registry():
    assert search.METRICS == {"hamming": KS.OP_XOR, "phd": KS.OP_AND}
    assert list(search.METRICS) == list(C.DISTANCES)
    assert ablation.DISTANCES == C.DISTANCE_NAMES
    assert "phd" in C.DISTANCES and "cosine" not in C.DISTANCES


def test_lookup():
    assert C.distance("phd") is C.PHD and C.distance("hamming") is C.HAMMING
    assert C.distance(C.PHD) is C.PHD
    for bad in ("cosine", "PHD", "score", "", None, ["phd"]):
        with pytest.raises(ValueError, match=r"distance must be one of \('hamming', 'phd'\), got"):
            C.distance(bad)
    with pytest.raises(ValueError, match="'cosine'"):
        C.distance("cosine")


def _codes(m, n, seed):
    rng = np.random.default_rng(seed)
    bits = rng.random((n, m)) < rng.uniform(0.2, 0.8)
    return bits, C.pack(bits)


@pytest.mark.parametrize("m", WIDTHS)
@pytest.mark.parametrize("name", ["hamming", "phd"])
def test_table_and_pair_scoring_equal_the_references(name, m):
    d = C.distance(name)
    ref = {"hamming": C.hamming_reference, "phd": C.phd_reference}[name]
    ub, uc = _codes(m, 9, m)
    ib, ic = _codes(m, 13, m + 1)
    want = ref(ub, ib)
    np.testing.assert_array_equal(d.reference(ub, ib), want)
    for items in (ic, ic.negate()):
        t = d.table(uc, items)
        assert t.dtype == np.int32
        np.testing.assert_array_equal(t, want)
        np.testing.assert_array_equal(d.table(uc[2], items), want[2])
        u, i = np.meshgrid(np.arange(9), np.arange(13), indexing="ij")
        p = d.pairs(uc, items, u.ravel()[::-1], i.ravel()[::-1])
        np.testing.assert_array_equal(p, want.ravel()[::-1])
        np.testing.assert_array_equal(C.pair_distances(uc, items, u.ravel(), i.ravel(), name),
                                      want.ravel())
        assert d.store(items).negated == d.items_negated
    # the old direct paths give the same numbers
    np.testing.assert_array_equal(C.hamming(uc, ic) if name == "hamming" else C.phd(uc, ic), want)
    if d.symmetric:
        np.testing.assert_array_equal(d.table(ic, uc), want.T)


@pytest.mark.parametrize("m", WIDTHS)
@pytest.mark.parametrize("name", ["hamming", "phd"])
def test_search_op_and_engine_codes_rank_by_the_distance(name, m):
    d = C.distance(name)
    _, uc = _codes(m, 5, 3 * m)
    _, ic = _codes(m, 11, 3 * m + 1)
    want = d.table(uc, ic)
    idx = search.BinaryIndex(m, name)
    idx.add(ic)
    assert idx.op == d.search_op
    np.testing.assert_array_equal(idx.distances(uc), want)
    # a Hamming engine's view: its Hamming distances, mapped back
    items = d.engine_items(ic.rows(), m)
    queries, aux = d.engine_queries(uc.rows(), m)
    assert items.dtype == queries.dtype == np.uint8
    assert items.shape[1] == queries.shape[1] == d.engine_bytes(m)
    h = np.bitwise_count(queries[:, None, :] ^ items[None, :, :]).sum(axis=2)
    np.testing.assert_array_equal(d.from_engine(h, aux, m), want)
    if d.items_negated:
        assert d.engine_bytes(m) == padding.padded_bytes(m)
        with pytest.raises(ValueError):
            d.from_engine(h + 1, aux, m)


# ------------------------------------------------------------------ no list of its own

NAMES = set(C.RANKS)
#: The registry module and the benchmark/report chapters, whose lists name benchmark
#: kernels ("hamming", "phd", "phd_xor_and", ...) and display labels, not the distance set.
EXEMPT = ("codes.py", "bench/", "report/")


def _literal_names(node) -> set | None:
    """The set of strings of a literal tuple/list/set of strings, or of a dict's string
    keys; None for anything else."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        elts = node.elts
    elif isinstance(node, ast.Dict):
        elts = node.keys
    else:
        return None
    if not elts or not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
        return None
    return {e.value for e in elts}


def own_distance_lists(root: Path = ROOT) -> list[str]:
    """Literal tuples, lists, sets and dicts (keys) in phdlib that spell out the distance
    set (every element a ranking kind, Hamming and PHD among them)."""
    found = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith(EXEMPT):
            continue
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            s = _literal_names(node)
            if s and {"hamming", "phd"} <= s <= NAMES:
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_the_scan_finds_a_list_of_its_own(tmp_path):
    (tmp_path / "m.py").write_text('A = ("phd", "hamming")\nB = {"hamming": 0, "phd": 1}\n'
                                   'C = ("hamming", "phd", "score")\nD = ("hamming", "phd_c")\n'
                                   'E = {"hamming": 0, "phd": 1, "inner_product": 2}\n')
    assert [f.split(":")[1] for f in own_distance_lists(tmp_path)] == ["1", "2", "3"]


def test_no_module_keeps_its_own_list_of_the_distances():
    found = own_distance_lists()
    assert not found, ("ask phdlib.codes (DISTANCES, DISTANCE_NAMES, RANKS, distance()) "
                       "instead of spelling out the distances:\n" + "\n".join(found))
