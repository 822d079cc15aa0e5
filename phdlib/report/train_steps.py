"""The training-step benchmark (``phd bench --train``) for reading: a table and findings.

From the rows of :func:`phdlib.bench.train.run` (a recorded file's or a live
run's): :func:`steps_frame` lays them out per shape, width, method, step and
thread count with each design's limit, and :func:`findings` says in
sentences, computed from the numbers, how the exact sparse step compares
with the dense one at each shape and how close each comes to its limit.
:func:`machines_frame` and :func:`machines_findings` set the same benchmark
run on other machines beside one, each comparison made both from the medians
of the rounds and from their best rounds, so that a difference the rounds'
spread can undo is not called one.
"""
from __future__ import annotations

import pandas as pd

from .. import methods
from ..methods.vh_config import SPARSE_GAP
from . import page

__all__ = ["STEP_LABELS", "SHAPE_LABELS", "steps_frame", "findings", "machine_text",
           "machines_frame", "machines_findings"]

#: How the steps are named on the page.
STEP_LABELS = {"autograd": "autograd", "dense": "dense Adam", "exact": "exact sparse Adam",
               "auto": "as training runs it", "lazy": "lazy Adam"}
#: How the shapes are named on the page.
SHAPE_LABELS = {"ml-1m": "ML-1M", "ml-10m": "ML-10M", "amazon": "Amazon"}


def steps_frame(rows: list[dict] | pd.DataFrame, method: str | None = None,
                bits: int | None = None) -> pd.DataFrame:
    """Rows (shape, [bits, method label,] step label, threads); columns ms per iteration,
    the dense step's time over this one's (same threads), the design's limit (ms), the
    ratio to it and the row-steps replayed in full per step (exact step only). ``method``,
    ``bits``: keep only those rows (and leave that level out of the index)."""
    df = pd.DataFrame(rows)
    if method is not None:
        df = df[df["method"] == method]
    if bits is not None:
        df = df[df["bits"] == bits]
    levels = [("shape", [SHAPE_LABELS.get(s, s) for s in df["shape"]])]
    if bits is None:
        levels.append(("bits", df["bits"].astype(int).to_numpy()))
    if method is None:
        levels.append(("method", [methods.label(m) for m in df["method"]]))
    levels += [("step", [STEP_LABELS.get(s, s) for s in df["step"]]),
               ("threads", df["threads"].astype(int).to_numpy())]
    out = pd.DataFrame({
        "ms / iteration": df["ms_per_iteration"].astype(float).to_numpy(),
        "dense ÷ this": [f"{v:.2f}×" for v in df["vs_dense"]],
        "limit (ms)": df["limit_ms"].astype(float).to_numpy(),
        "× limit": [f"{v:.1f}×" for v in df["over_limit"]],
        "replayed rows / step": [f"{v:,.0f}" if s == "exact" else "–"
                                 for v, s in zip(df["full_rows_per_step"], df["step"])],
    }, index=pd.MultiIndex.from_arrays([v for _, v in levels], names=[n for n, _ in levels]))
    return out


def _ceiling(df: pd.DataFrame, exact: pd.Series) -> tuple[float, float] | None:
    """``(speed-up, rest ms)``: the most the exact step ``exact`` (a row of ``df``) could
    run faster than the dense step at its shape and thread count, were it at its limit
    while the rest of a step stayed as the lazy step measures it (its time beyond its own
    limit, which is the touched rows' Adam alone); None without both rows."""
    same = df[(df["shape"] == exact["shape"]) & (df["threads"] == exact["threads"])]
    dense, lazy = same[same["step"] == "dense"], same[same["step"] == "lazy"]
    if not len(dense) or not len(lazy):
        return None
    rest = max(float(lazy["ms_per_iteration"].iloc[0]) - float(lazy["limit_ms"].iloc[0]), 0.0)
    return float(dense["ms_per_iteration"].iloc[0]) / (float(exact["limit_ms"]) + rest), rest


def findings(rows: list[dict] | pd.DataFrame, method: str = "vh-phd", bits: int = 64) -> list[str]:
    """The benchmark's findings for ``method`` at ``bits``: the exact step against the
    dense one per shape and thread count, and the exact step against its own limit."""
    df = pd.DataFrame(rows)
    df = df[(df["method"] == method) & (df["bits"] == bits)]
    out = []
    exact = df[df["step"] == "exact"]
    if len(exact):
        parts, slower = [], []
        for shape, g in exact.groupby("shape", sort=False):
            speeds = " and ".join(f"{r['vs_dense']:.2f}× on {_threads(r['threads'])}"
                                  for _, r in g.sort_values("threads").iterrows())
            parts.append(f"{speeds} at the {SHAPE_LABELS.get(shape, shape)} shape")
            if (g["vs_dense"] < 1).any():
                slower.append(SHAPE_LABELS.get(shape, shape))
        out.append(f"For {methods.label(method)} at {bits} bits the exact sparse step, the "
                   "same parameters bit for bit, runs at " + "; ".join(parts)
                   + " the dense step's speed.")
        if slower:
            out.append(f"Where every row is touched every few steps ({', '.join(slower)}), "
                       "replaying the missed steps costs more than the dense pass it saves, "
                       "so training keeps the dense pass for tables of fewer than "
                       f"SPARSE_GAP = {SPARSE_GAP} rows per rating of a batch, and is "
                       "as fast there as before.")
        one = exact[exact["threads"] == 1]
        if len(one):
            r = one.loc[one["rows"].idxmax()]
            per = r["full_rows_per_step"] / max(r["touched_rows_per_step"], 1)
            out.append(
                f"At the {SHAPE_LABELS.get(r['shape'], r['shape'])} shape it replays "
                f"the arithmetic of {r['full_rows_per_step']:,.0f} row-steps per step, "
                f"about {per:.0f} for each row a step touches: a parameter goes on moving "
                f"on its first moment until its update falls below half the spacing of "
                f"float32 numbers at it or its row is touched again, whichever comes "
                f"first, and the replay steps a row's elements still moving, in blocks "
                f"of 16, the others' moments alone. That "
                f"arithmetic and the touched rows' bytes put its limit at "
                f"{r['limit_ms']:.2f} ms a step, and it runs at {r['over_limit']:.1f} times "
                f"that.")
            ceiling = _ceiling(df, r)
            if ceiling is not None:
                out.append(
                    f"So on this machine the design itself caps it: at that limit, with the "
                    f"rest of a step as it is (the batch's forward and backward passes, its "
                    f"random numbers and gathered rows: the lazy step's time beyond its own "
                    f"limit, {ceiling[1]:.2f} ms), it would run at most {ceiling[0]:.1f} "
                    f"times as fast as the dense step on one thread. Beyond that it needs "
                    f"fewer replayed steps, or a cheaper exact step of an element than the "
                    f"dense pass's square root and division, which the limit counts for "
                    f"every replayed step.")
    auto = df[(df["step"] == "auto") & (df["threads"] == 1)]
    if len(auto):
        parts = [f"{r['vs_dense']:.2f}× at the {SHAPE_LABELS.get(r['shape'], r['shape'])} shape"
                 for _, r in auto.iterrows()]
        out.append("As training runs it, each table dense or sparse by its size (sparse "
                   f"from SPARSE_GAP = {SPARSE_GAP} rows per rating of a batch), the step "
                   "runs at " + ", ".join(parts) + " the dense step's speed, on one thread.")
    lazy = df[(df["step"] == "lazy") & (df["threads"] == 1)]
    if len(lazy):
        r = lazy.loc[lazy["rows"].idxmax()]
        out.append(f"Lazy Adam, which moves the touched rows only, runs {r['vs_dense']:.1f} times "
                   f"as fast as the dense step there, on one thread.")
    return out


def _threads(n) -> str:
    """``"1 thread"``, ``"2 threads"``."""
    return f"{int(n)} thread{'s' if int(n) != 1 else ''}"


def machine_text(rec: dict) -> str:
    """The machine a benchmark record (:func:`phdlib.bench.train.load`) ran on, for a
    sentence: ``"2 cores of an AMD EPYC"``. The CPU comes from the provenance or, in
    files written before it named one, from the run's machine (``run["machine"]``);
    ``"a machine the file does not name"`` when neither names it."""
    prov, machine = rec.get("provenance") or {}, (rec.get("run") or {}).get("machine") or {}
    text = page.cores_text({"cpus": prov.get("cpus") or machine.get("cores"),
                            "cpu": prov.get("cpu") or machine.get("cpu")})
    return text or "a machine the file does not name"


def _pick(rows, method: str, bits: int) -> pd.DataFrame:
    """The rows of ``method`` at ``bits`` indexed by (shape, step, threads), with
    ``best_vs_dense``: the dense step's best round over this step's (NaN without
    ``ms_best``). ``ValueError`` naming a (shape, step, threads) given twice."""
    df = pd.DataFrame(rows)
    df = df[(df["method"] == method) & (df["bits"] == bits)].copy()
    df["threads"] = df["threads"].astype(int)
    twice = df[df.duplicated(["shape", "step", "threads"])]
    if len(twice):
        r = twice.iloc[0]
        raise ValueError(f"the benchmark holds {methods.label(method)} at {bits} bits twice for "
                         f"shape {r['shape']!r}, step {r['step']!r}, {_threads(r['threads'])}")
    df = df.set_index(["shape", "step", "threads"]).sort_index()
    best = df["ms_best"].astype(float) if "ms_best" in df.columns else pd.Series(
        float("nan"), index=df.index)
    dense = {(s, t): best.get((s, "dense", t), float("nan")) for s, _, t in df.index}
    df["best_vs_dense"] = [dense[(s, t)] / best[k] for k in df.index for s, _, t in [k]]
    return df


def _num(df: pd.DataFrame, key, col: str) -> float:
    """``df.loc[key, col]`` as a float; NaN where the row or the column is missing."""
    if col not in df.columns or key not in df.index:
        return float("nan")
    return float(df.loc[key, col])


def machines_frame(base: dict, others: list[dict], names: list[str] | None = None,
                   method: str = "vh-phd", bits: int = 64) -> pd.DataFrame:
    """The benchmark ``base`` beside the same one run on ``others`` (records of
    :func:`phdlib.bench.train.load`, named ``names``, by default A, B, ...), for
    ``method`` at ``bits``: rows (shape, step, threads) of ``base`` at the shapes
    some other record measured; columns ms per iteration (median of the rounds) and
    the dense step's time over this one's (median of the rounds' ratios), above
    (``base``) and on each machine, and ``time, machine X ÷ above``. A step a
    machine did not measure is NaN (ms, ratio) or :data:`phdlib.report.page.NA` (the
    dense-over-this text)."""
    names = names or [chr(ord("A") + i) for i in range(len(others))]
    b = _pick(base["rows"], method, bits)
    picked = [_pick(o["rows"], method, bits) for o in others]
    shapes = {s for o in picked for s in o.index.get_level_values("shape")}
    b = b[b.index.get_level_values("shape").isin(shapes)]
    out = pd.DataFrame({"ms, above": b["ms_per_iteration"].astype(float),
                        "dense ÷ this, above": [f"{v:.2f}×" for v in b["vs_dense"]]},
                       index=b.index)
    for name, o in zip(names, picked):
        o = o.reindex(b.index)
        ms = o["ms_per_iteration"].astype(float)
        out[f"ms, machine {name}"] = ms
        out[f"dense ÷ this, machine {name}"] = [f"{v:.2f}×" if v == v else page.NA
                                                for v in o["vs_dense"].astype(float)]
        out[f"time, machine {name} ÷ above"] = ms / out["ms, above"]
    order = {s: k for k, s in enumerate(STEP_LABELS)}
    keys = sorted(out.index, key=lambda k: (-int(b.loc[k, "rows"]), order.get(k[1], 99), k[2]))
    out = out.loc[keys]
    out.index = pd.MultiIndex.from_tuples(
        [(SHAPE_LABELS.get(s, s), STEP_LABELS.get(st, st), int(t)) for s, st, t in keys],
        names=["shape", "step", "threads"])
    return out


def _limit_part(r: pd.Series) -> str | None:
    """Which part sets a row's limit, the larger: ``"memory traffic"`` or ``"arithmetic"``;
    None for a file without the two parts."""
    t, a = r.get("limit_traffic_ms"), r.get("limit_arithmetic_ms")
    if t is None or a is None or pd.isna(t) or pd.isna(a):
        return None
    return "memory traffic" if float(t) >= float(a) else "arithmetic"


def _second_thread(df: pd.DataFrame, shape: str, step: str) -> tuple[float, float]:
    """How many times as fast a second thread makes ``step`` at ``shape`` (rows of
    :func:`_pick`): from the medians of the rounds and from the best rounds (NaN where
    a thread count or ``ms_best`` is missing)."""
    one, two = (shape, step, 1), (shape, step, 2)
    return (_num(df, one, "ms_per_iteration") / _num(df, two, "ms_per_iteration"),
            _num(df, one, "ms_best") / _num(df, two, "ms_best"))


def _best(there: list[float], above: list[float]) -> str:
    """`` (best rounds: 3.52 and 3.54 there, 3.02 and 3.36 above)``; ``""`` where a
    file has no best rounds."""
    if any(v != v for v in there + above):
        return ""
    return (f" (best rounds: {page.and_list(f'{v:.2f}' for v in there)} there, "
            f"{page.and_list(f'{v:.2f}' for v in above)} above)")


def _step_text(o: pd.DataFrame, b: pd.DataFrame, shape: str, step: str, lead: str) -> str | None:
    """Sentences on ``step`` at ``shape`` there (``o``) and above (``b``, both of
    :func:`_pick`): which part sets its limit, and what a second thread does to it
    (with the traffic probe's bandwidth where memory traffic sets the limit on both);
    None when the files give neither. ``lead`` begins them ("At the Amazon shape, the")."""
    k = (shape, step, 1)
    part_o, part_b = _limit_part(o.loc[k]), _limit_part(b.loc[k])
    what = f"{lead} {STEP_LABELS[step]} step"
    out = []
    if part_o and part_o == part_b:
        out.append(f"{what}'s limit is set by its {part_o} on both machines.")
    elif part_o and part_b:
        out.append(f"{what}'s limit is set by its {part_o} there and by its {part_b} above.")
    (mo, bo), (mb, bb) = _second_thread(o, shape, step), _second_thread(b, shape, step)
    if mo == mo and mb == mb:
        subject = "it" if out else what[0].lower() + what[1:]
        text = (f"A second thread makes {subject} {mo:.2f} times as fast there and {mb:.2f} "
                f"times above{_best([bo], [bb])}")
        bw = [[_num(df, (shape, step, t), "bandwidth_gbs") for t in (1, 2)] for df in (o, b)]
        if part_o == part_b == "memory traffic" and all(v == v for x in bw for v in x):
            text += (f", while the bandwidth of the traffic probe, measured in the same runs, "
                     f"goes from {bw[0][0]:.1f} to {bw[0][1]:.1f} GB/s there and from "
                     f"{bw[1][0]:.1f} to {bw[1][1]:.1f} GB/s above")
        out.append(text + ".")
    return " ".join(out) or None


def _ratios(o: pd.DataFrame, b: pd.DataFrame, keys: list, first: bool) -> tuple[str, str, str]:
    """The exact step over the dense one at ``keys`` (one shape, ascending threads):
    ``(there, above, best)`` texts, medians of the rounds' ratios there and above and
    the best rounds' (``first``: the sentence that says what the figures are)."""
    there = [_num(o, k, "vs_dense") for k in keys]
    threads = [_threads(k[2]) for k in keys]
    if first:
        said = page.and_list([f"{there[0]:.2f} times as fast as the dense step on {threads[0]}"]
                             + [f"{v:.2f} times on {t}" for v, t in zip(there[1:], threads[1:])])
    else:
        said = page.and_list(f"{v:.2f} times on {t}" for v, t in zip(there, threads))
    above = page.and_list(f"{_num(b, k, 'vs_dense'):.2f}" for k in keys) + " times"
    return said, above, _best([_num(o, k, "best_vs_dense") for k in keys],
                              [_num(b, k, "best_vs_dense") for k in keys])


def _verdicts(o: pd.DataFrame, b: pd.DataFrame, keys: list, where: str) -> str | None:
    """Where the exact step gains more over the dense one, there or above, per thread
    count at ``keys``: called only where the medians of the rounds and the best rounds
    agree; the others named as what this run cannot tell."""
    more, less, unsure = [], [], []
    for k in keys:
        med = _num(o, k, "vs_dense") - _num(b, k, "vs_dense")
        best = _num(o, k, "best_vs_dense") - _num(b, k, "best_vs_dense")
        if med == med and med != 0 and (best != best or med * best > 0):
            (more if med > 0 else less).append(_threads(k[2]))
        else:
            unsure.append(_threads(k[2]))
    said = []
    if more:
        said.append(f"more there than above on {page.and_list(more)}")
    if less:
        said.append(f"less there than above on {page.and_list(less)}")
    out = ""
    if said:
        out = (f"So {where} the exact step gains " + " and ".join(said)
               + ", by the medians of the rounds and by their best rounds alike.")
    if unsure:
        out += (f"{' ' if out else ''}On {page.and_list(unsure)} the medians and the best "
                f"rounds disagree on which machine it gains more on, so this run cannot tell.")
    return out or None


def machines_findings(base: dict, other: dict, name: str, method: str = "vh-phd",
                      bits: int = 64) -> list[str]:
    """Sentences on the benchmark ``other`` (named ``name`` on the page, ``"machine A"``)
    against ``base`` ("above"), for ``method`` at ``bits``, computed from the numbers:
    the exact step's gain over the dense one at each shape both measured; how much
    longer the dense and exact steps take there; at the largest such shape, which part
    sets each step's limit and what a second thread does to it, how close the exact
    step comes to its limit, and where it gains more. Every comparison is made from the
    medians of the rounds and, where the files have them, from the best rounds too."""
    b, o = _pick(base["rows"], method, bits), _pick(other["rows"], method, bits)
    both = b.index.intersection(o.index)
    shapes = sorted({k[0] for k in both if k[1] == "exact"},
                    key=lambda s: -int(o.loc[s]["rows"].iloc[0]))
    where = f"{name} ({machine_text(other)})"
    if not shapes:
        return [f"{where[0].upper() + where[1:]} measured no exact step of "
                f"{methods.label(method)} at {bits} bits at a shape measured above."]
    out = []
    for s in shapes:
        keys = sorted(k for k in both if k[0] == s and k[1] == "exact")
        there, above, best = _ratios(o, b, keys, not out)
        if not out:
            out.append(f"At the {SHAPE_LABELS.get(s, s)} shape, the exact sparse step of "
                       f"{methods.label(method)} at {bits} bits runs {there} on {where}, and "
                       f"{above} above ({machine_text(base)}); each figure is the median of "
                       f"the rounds' ratios of the two steps{best}.")
        else:
            out.append(f"At the {SHAPE_LABELS.get(s, s)} shape, {there} there and {above} "
                       f"above{best}.")
    timed = [k for k in both if k[1] in ("dense", "exact")]
    times = [_num(o, k, "ms_per_iteration") / _num(b, k, "ms_per_iteration") for k in timed]
    times = [t for t in times if t == t]
    if times:
        lo, hi = min(times), max(times)
        span = f"{lo:.1f}" if round(lo, 1) == round(hi, 1) else f"{lo:.1f} to {hi:.1f}"
        at = page.and_list(SHAPE_LABELS.get(s, s) for s in shapes)
        out.append(f"The dense and exact steps take {span} times as long there as above "
                   f"({len(times)} medians, at the {at} shape{'s' if len(shapes) > 1 else ''}).")
    s = shapes[0]
    lead = f"At the {SHAPE_LABELS.get(s, s)} shape, the"   # the next sentence: "The"
    for step in ("dense", "exact"):
        if (s, step, 1) in both:
            text = _step_text(o, b, s, step, lead)
            if text:
                out.append(text)
                lead = "The"
    k = (s, "exact", 1)
    if k in both:
        there, above = ([_num(df, k, "over_limit")] for df in (o, b))
        best = [[_num(df, k, "ms_best") / _num(df, k, "limit_ms")] for df in (o, b)]
        out.append(f"On one thread the exact step takes {there[0]:.2f} times the time of its "
                   f"own limit there and {above[0]:.2f} times above{_best(*best)}.")
    keys = sorted(k for k in both if k[0] == s and k[1] == "exact")
    verdict = _verdicts(o, b, keys, f"at the {SHAPE_LABELS.get(s, s)} shape")
    if verdict:
        out.append(verdict)
    return out
