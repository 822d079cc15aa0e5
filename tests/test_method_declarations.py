"""What a method declares, it declares on itself; and declaring it changed no run key.

Every registered method (:func:`phdlib.methods.names`) must declare its label,
description, what it ranks by (consistent with whether it learns codes), its
quick profile (:attr:`Method.quick`, set explicitly, ``{}`` when cheap), a
config spec covering every default key, and a colour when the paper reports
it. The resolved configs, and so the run keys of every stored run, are those
the code of commit 0cfbde4 computed (``tests/fixtures/method_configs.json``).
"""
from __future__ import annotations

import importlib
import json
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import matplotlib.colors
import pytest

from phdlib import experiments, methods, results
from phdlib.experiments import training
from phdlib.codes import DISTANCE_NAMES
from phdlib.methods import spec as S
from phdlib.methods import tuning
from phdlib.methods.base import Method
from phdlib.methods.fitted import CodeModel, ItemScoreModel
from phdlib.report.style import COLORS

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "method_configs.json").read_text())
CASES = [(ds, b) for ds in ("ml-1m", "synthetic") for b in (32, 64)]


def declaration_problems(name: str) -> list[str]:
    """What method ``name`` leaves undeclared or declares inconsistently, one line each."""
    m = methods.get(name)
    out = []
    if not m.label:
        out.append("no label")
    if not m.description:
        out.append("no description")
    if m.ranks_by not in methods.RANKS:
        out.append(f"ranks_by {m.ranks_by!r} is not one of {methods.RANKS}")
    elif m.ranks_by in DISTANCE_NAMES and not (m.learns_codes and issubclass(m.model, CodeModel)):
        out.append(f"ranks by the code distance {m.ranks_by!r} but learns_codes="
                   f"{m.learns_codes}, model={m.model.__name__}")
    elif not m.learns_codes and m.ranks_by != "score":
        out.append(f"learns no codes but ranks by {m.ranks_by!r}")
    if m.quick is methods.UNSET or not isinstance(m.quick, dict):
        out.append(f"quick not declared (Method.quick is {m.quick!r}; {{}} when cheap already)")
    if m.in_paper and m.color is None:
        out.append("no colour (Method.color), though the paper reports it")
    if m.color is not None and not matplotlib.colors.is_color_like(m.color):
        out.append(f"colour {m.color!r} is not a matplotlib colour")
    if not isinstance(m.config_spec, S.ConfigSpec):
        out.append(f"no config spec (Method.config_spec is {m.config_spec!r})")
        return out
    for ds, b in CASES:
        cfg = m.defaults(ds, b)
        declared = set(m.config_spec.keys)
        if set(cfg) != declared:
            out.append(f"config spec at {ds}/{b}: undeclared keys {sorted(set(cfg) - declared)}, "
                       f"declared but absent {sorted(declared - set(cfg))}")
            continue
        try:
            m.config_spec.check_config(cfg, name)
            if isinstance(m.quick, dict):
                methods.resolve_config(name, ds, b, m.quick)
        except (KeyError, ValueError, TypeError) as exc:
            out.append(f"at {ds}/{b}: {exc}")
    return out


def assert_declared(names) -> None:
    """AssertionError listing every method with a problem (:func:`declaration_problems`)."""
    bad = {n: p for n in names if (p := declaration_problems(n))}
    assert not bad, "methods with missing declarations:\n" + "\n".join(
        f"  {n}: {'; '.join(p)}" for n, p in bad.items())


def test_every_registered_method_declares_itself():
    assert len(methods.names()) >= 12
    assert_declared(methods.names())


class _Toy(Method):
    """A method that declares everything but its quick profile."""

    name = "toy-without-quick"
    label = "Toy"
    description = "declares everything but quick"
    model = ItemScoreModel
    config_spec = S.ConfigSpec(evaluation={"ties": S.TIES})

    def defaults(self, dataset, bits):
        return {"ties": "expected", "impl": 1}


@contextmanager
def registered(method: Method):
    """``method`` registered (:func:`phdlib.methods.register`) for the ``with`` block."""
    m = methods.register(method)
    try:
        yield m
    finally:
        methods.unregister(m.name)


@pytest.fixture
def toy():
    with registered(_Toy()) as m:
        yield m


def test_a_method_missing_quick_is_named(toy):
    with pytest.raises(AssertionError, match=r"toy-without-quick: quick not declared"):
        assert_declared(methods.names())
    toy.quick = {}
    assert_declared(methods.names())          # declared: nothing left to name
    toy.config_spec = S.ConfigSpec()          # the spec now lacks 'ties'
    with pytest.raises(AssertionError, match=r"toy-without-quick: config spec .*undeclared keys \['ties'\]"):
        assert_declared(methods.names())


#: The methods the fixture pins: those of 0cfbde4. A method added later is new, not changed;
#: its own tests pin what it computes.
PINNED = sorted({k.split("|")[0] for k in FIXTURE["configs"]})


#: Deliberate implementation revisions since 0cfbde4, by method: the new ``impl`` and why.
#: Everything else of such a method's config is still pinned; its run keys must differ from
#: the fixture's (so that runs stored before are trained again, never mixed in).
BUMPED = {
    # DCF's relaxed start: polar factor from the r x r Gram matrix, short rows in dual form
    # (the same solutions, another rounding); CCCF carries DCF's revision
    "dcf": 3,
    "cccf": 3,
}


def _pinned(case: str, section: str) -> dict:
    """The fixture's ``section`` entry of ``case``, with a :data:`BUMPED` method's new impl."""
    want = dict(FIXTURE[section][case])
    name = case.split("|")[0]
    if name in BUMPED:
        assert want["impl"] < BUMPED[name], f"{case}: impl {want['impl']} is not below {BUMPED[name]}"
        want["impl"] = BUMPED[name]
    return want


@pytest.mark.parametrize("name", PINNED)
def test_resolved_default_configs_are_those_of_0cfbde4(name):
    """The config a run is keyed by is the same dict as before (keys, values and types),
    but for the implementation revisions of :data:`BUMPED`, whose run keys change."""
    for ds, b in CASES:
        case = f"{name}|{ds}|{b}"
        cfg = methods.resolve_config(name, ds, b)
        want = _pinned(case, "configs")
        assert cfg == want, f"{case}: {cfg} != {want}"
        for k, v in want.items():
            assert type(cfg[k]) is type(v), f"{case}[{k!r}]: {type(cfg[k]).__name__} != {type(v).__name__}"
        assert json.dumps(cfg, sort_keys=True) == json.dumps(want, sort_keys=True), case
        key = results.run_key(name, ds, b, 0, cfg, "fixture")
        if name in BUMPED:
            assert key != FIXTURE["run_keys"][case], case
        else:
            assert key == FIXTURE["run_keys"][case], case
        quick, _ = experiments.profile_overrides("quick", name, ds, b)
        assert methods.resolve_config(name, ds, b, quick) == _pinned(case, "quick"), case


@pytest.mark.parametrize("name", PINNED)
def test_grid_points_resolve_as_before(name):
    """Every tuning point's override passes the spec and resolves to the same config."""
    m = methods.get(name)
    cfg = methods.resolve_config(name, "ml-1m", 64)
    points = m.grid(cfg, m.tune_point(cfg, 64)[0])
    got = [methods.resolve_config(name, "ml-1m", 64, pt) for pt in points]
    want = [{**pt, "impl": BUMPED[name]} if name in BUMPED else pt
            for pt in FIXTURE["points"][name]]
    assert got == want


def test_every_pinned_method_is_still_registered():
    """A method of 0cfbde4 may not vanish or be renamed (its stored runs carry its name)."""
    assert set(PINNED) <= set(methods.REGISTRY), sorted(set(PINNED) - set(methods.REGISTRY))
    assert len(PINNED) == 12


@pytest.mark.parametrize("name,key,value,expected", [
    ("vh", "lr", "fast", "a finite number"),
    ("vh", "train_sampling", "sometimes", "one of 'stochastic', 'deterministic'"),
    ("vh", "tune", "yes", "true or false"),
    ("dcf", "max_iterations", 2.5, "an integer"),
    ("cccf", "blocks", [8, "x"], "a list of integers >= 1"),
    ("mf", "tune_ratings", -1, "tune_ratings must be a positive integer (ratings) or None"),
    ("mf-mean", "scopes", ["joint", "nowhere"], "a list of strings, each one of"),
    ("vh-phd", "noise_std", float("nan"), "a finite number >= 0"),
])
def test_a_mistyped_override_names_key_value_and_type(name, key, value, expected):
    with pytest.raises(methods.ConfigTypeError) as err:
        methods.resolve_config(name, "ml-1m", 32, {key: value})
    msg = str(err.value)
    assert key in msg and repr(value) in msg and expected in msg, msg
    assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)


def test_well_typed_overrides_keep_their_value():
    """Numbers of another Python kind that work today stay as given (the key hashes them)."""
    cfg = methods.resolve_config("vh", "ml-1m", 32, {"lr": 1, "tune_bits": None, "tune": False})
    assert cfg["lr"] == 1 and type(cfg["lr"]) is int and cfg["tune_bits"] is None
    cfg = methods.resolve_config("cccf", "ml-1m", 32, {"blocks": (16, 16), "mf_dim": None})
    assert cfg["blocks"] == (16, 16)


def test_spec_sections_split_a_config():
    cfg = methods.resolve_config("vh", "ml-1m", 64)
    sec = methods.get("vh").config_spec.sections(cfg)
    assert {"tune", "tune_bits", "tune_ratings", "lr_grid"} <= set(sec["tuning"])
    assert set(sec["evaluation"]) == {"ties", "discount"} and set(sec["impl"]) == {"impl"}
    assert "lr" in sec["hyper"] and "ties" not in sec["hyper"]
    with pytest.raises(ValueError, match="'ties' is declared in 'hyper' and 'evaluation'"):
        S.ConfigSpec(hyper={"ties": S.TIES}, evaluation={"ties": S.TIES})


def test_one_tuning_policy():
    vh, mf = methods.get("vh"), methods.get("mf")
    cfg = methods.resolve_config("vh", "ml-1m", 32)
    assert vh.tune_point(cfg, 32) == (64, tuning.TUNE_SEED) == (64, 0)
    assert vh.tunes(cfg, 32) and not vh.tunes({**cfg, "tune": False}, 32)
    assert tuning.is_anchor(cfg, 32, 0) is False and tuning.is_anchor(cfg, 64, 0) is True
    mcfg = methods.resolve_config("mf", "ml-1m", 32)
    assert mf.tune_point(mcfg, 32) == (32, 0)
    assert experiments.training.TUNE_SEED == tuning.TUNE_SEED


def test_nothing_else_reads_tune_bits():
    """Where a grid is tuned is :mod:`phdlib.methods.tuning`'s rule; no module reads the key."""
    root = Path(methods.__file__).resolve().parents[1]
    readers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if re.search(r"""(get\(|\[)["']tune_bits["']""", p.read_text())
                     and str(p.relative_to(root)) != "methods/tuning.py")
    assert readers == [], f"modules reading config['tune_bits'] themselves: {readers}"


def test_colors_and_quick_are_views_of_the_methods(toy):
    assert COLORS["vh-phd"] == methods.get("vh-phd").color == "tab:red"
    assert COLORS.get("vh-bias") is None and "vh-bias" not in COLORS
    assert "toy-without-quick" not in COLORS
    toy.color = "tab:olive"
    assert COLORS["toy-without-quick"] == "tab:olive"
    with pytest.raises(TypeError):
        COLORS["vh"] = "red"  # read-only
    assert experiments.QUICK["dcf"] == {"tune": False, "max_iterations": 10}
    assert experiments.QUICK["random"] == {}


def test_contributings_example_is_one_file_and_one_registry_line(tmp_path, monkeypatch,
                                                                  synthetic_split):
    """CONTRIBUTING.md's "Adding a method" example, written to a file of its own and named by
    one line in the registry (names.METHODS), is declared, trains, tunes and is stored."""
    text = (Path(__file__).resolve().parents[1] / "CONTRIBUTING.md").read_text()
    code = re.search(r"```python\n# phdlib/methods/item_noise.py\n(.*?)```", text, re.S).group(1)
    code = code.replace("from . import spec as S", "from phdlib.methods import spec as S")
    code = code.replace("from .base import", "from phdlib.methods.base import")
    code = code.replace("from .fitted import", "from phdlib.methods.fitted import")
    (tmp_path / "item_noise_example.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(methods.REGISTRY, "item-noise", "item_noise_example:ITEM_NOISE")
    try:
        assert "item-noise" in methods.names(in_paper=False)
        assert_declared(methods.names())
        run = training.run("item-noise", synthetic_split, 16, 0, root=tmp_path / "store",
                           progress=False)
        assert run.grid is not None and len(run.grid) == 2 and run.extra["chosen"]
        quick, _ = experiments.profile_overrides("quick", "item-noise", "synthetic", 16)
        assert quick == {"tune": False}
    finally:
        sys.modules.pop("item_noise_example", None)
        importlib.invalidate_caches()
