"""The training-step benchmark (``phd bench --train``) for reading: a table and findings.

From the rows of :func:`phdlib.bench.train.run` (a recorded file's or a live
run's): :func:`steps_frame` lays them out per shape, width, method, step and
thread count with each design's limit, and :func:`findings` says in
sentences, computed from the numbers, how the exact sparse step compares
with the dense one at each shape and how close each comes to its limit.
:func:`machines_frame` and :func:`machines_findings` set the same benchmark
run on other machines beside one: the exact step's gain over the dense one
depends on what bounds each step on a machine.
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
    """The rows of ``method`` at ``bits`` indexed by (shape, step, threads)."""
    df = pd.DataFrame(rows)
    df = df[(df["method"] == method) & (df["bits"] == bits)]
    return df.set_index(["shape", "step", "threads"]).sort_index()


def machines_frame(base: dict, others: list[dict], method: str = "vh-phd",
                   bits: int = 64) -> pd.DataFrame:
    """The benchmark ``base`` beside the same one run on ``others`` (records of
    :func:`phdlib.bench.train.load`), for ``method`` at ``bits``: rows (shape, step,
    threads) of ``base`` whose shape some other record measured; columns ms per
    iteration and the dense step's time over this one's, above (``base``) and on each
    machine ``i`` (1, 2, ...), and ``time, machine i ÷ above``. A step a machine did
    not measure is NaN (ms, ratio) or ``""`` (the dense-over-this text)."""
    b = _pick(base["rows"], method, bits)
    picked = [_pick(o["rows"], method, bits) for o in others]
    shapes = {s for o in picked for s in o.index.get_level_values("shape")}
    b = b[b.index.get_level_values("shape").isin(shapes)]
    out = pd.DataFrame({"ms, above": b["ms_per_iteration"].astype(float),
                        "dense ÷ this, above": [f"{v:.2f}×" for v in b["vs_dense"]]},
                       index=b.index)
    for i, o in enumerate(picked, start=1):
        o = o.reindex(b.index)
        ms = o["ms_per_iteration"].astype(float)
        out[f"ms, machine {i}"] = ms
        out[f"dense ÷ this, machine {i}"] = [f"{v:.2f}×" if v == v else ""
                                             for v in o["vs_dense"]]
        out[f"time, machine {i} ÷ above"] = ms / out["ms, above"]
    order = {s: k for k, s in enumerate(STEP_LABELS)}
    keys = sorted(out.index, key=lambda k: (-int(b.loc[k, "rows"]), order.get(k[1], 99), k[2]))
    out = out.loc[keys]
    out.index = pd.MultiIndex.from_tuples(
        [(SHAPE_LABELS.get(s, s), STEP_LABELS.get(st, st), int(t)) for s, st, t in keys],
        names=["shape", "step", "threads"])
    return out


def _bound(r) -> str | None:
    """What bounds a row's step by its own limit: ``"memory traffic"`` or
    ``"arithmetic"``; None for a file without the two parts of the limit."""
    t, a = r.get("limit_traffic_ms"), r.get("limit_arithmetic_ms")
    if t is None or a is None or t != t or a != a:
        return None
    return "memory traffic" if float(t) >= float(a) else "arithmetic"


def _scaling(df: pd.DataFrame, shape: str, step: str) -> float | None:
    """How many times as fast a second thread makes ``step`` at ``shape`` (rows of
    :func:`_pick`); None without both thread counts."""
    try:
        return (float(df.loc[(shape, step, 1), "ms_per_iteration"])
                / float(df.loc[(shape, step, 2), "ms_per_iteration"]))
    except KeyError:
        return None


def _bound_text(o: pd.DataFrame, b: pd.DataFrame, shape: str, step: str, lead: str) -> str:
    """One sentence on ``step`` at ``shape`` there (``o``) and above (``b``, both of
    :func:`_pick`): what bounds it and what a second thread does to it (with the
    bandwidth of its pass where memory bounds it); ``lead`` begins it ("The")."""
    k = (shape, step, 1)
    bound_o, bound_b = _bound(o.loc[k]), _bound(b.loc[k])
    text = f"{lead} {STEP_LABELS[step]} step"
    if bound_o and bound_o == bound_b:
        text += f" is bound by its {bound_o} on both machines"
    elif bound_o and bound_b:
        text += f" is bound by its {bound_o} there and by its {bound_b} above"
    there, above = _scaling(o, shape, step), _scaling(b, shape, step)
    if there is None or above is None:
        return text + "."
    text += (f"{':' if bound_o else ''} a second thread makes it {there:.2f} times as fast "
             f"there and {above:.2f} times above")
    if bound_o == "memory traffic" and bound_b == bound_o and "bandwidth_gbs" in o.columns \
            and "bandwidth_gbs" in b.columns:
        (o1, o2), (b1, b2) = [[float(df.loc[(shape, step, t), "bandwidth_gbs"]) for t in (1, 2)]
                              for df in (o, b)]
        text += (f", as the memory bandwidth of its pass, measured in the same runs, goes "
                 f"from {o1:.1f} to {o2:.1f} GB/s there and from {b1:.1f} to {b2:.1f} GB/s "
                 f"above")
    return text + "."


def machines_findings(base: dict, other: dict, name: str, method: str = "vh-phd",
                      bits: int = 64) -> list[str]:
    """Sentences on the benchmark ``other`` (named ``name`` on the page, ``"machine
    1"``) against ``base`` ("above"), for ``method`` at ``bits``, computed from the
    numbers: the exact step's gain over the dense one on both; how much longer each
    step takes there; what bounds the dense and the exact step and what a second
    thread does to each; how close the exact step comes to its limit; and whether the
    gain is larger or smaller there."""
    b, o = _pick(base["rows"], method, bits), _pick(other["rows"], method, bits)
    shared = [s for s in dict.fromkeys(o.index.get_level_values("shape"))
              if s in set(b.index.get_level_values("shape"))]
    shared.sort(key=lambda s: -int(o.loc[s]["rows"].iloc[0]))
    both = b.index.intersection(o.index)
    exact = [k for k in both if k[1] == "exact"]
    if not exact:
        return [f"{name[0].upper() + name[1:]} ({machine_text(other)}) measured no exact "
                f"step of {methods.label(method)} at {bits} bits at a shape measured above."]
    parts = []
    for s in shared:
        ks = sorted(k for k in exact if k[0] == s)
        if not ks:
            continue
        there = [f"{o.loc[k, 'vs_dense']:.2f}" for k in ks]
        above = page.and_list(f"{b.loc[k, 'vs_dense']:.2f}" for k in ks)
        if not parts:   # the first shape says what the numbers are
            there = [f"{there[0]} times as fast as the dense step on {_threads(ks[0][2])}"] + [
                f"{v} times on {_threads(k[2])}" for v, k in zip(there[1:], ks[1:])]
        else:
            there[-1] += " times"
        parts.append(f"{page.and_list(there)} at the {SHAPE_LABELS.get(s, s)} shape, "
                     f"against {above} times above")
    out = [f"On {name} ({machine_text(other)}), the same benchmark finds the exact sparse "
           f"step of {methods.label(method)} at {bits} bits " + "; ".join(parts)
           + f" (above: {machine_text(base)})."]
    timed = [k for k in both if k[1] in ("dense", "exact")]
    times = [float(o.loc[k, "ms_per_iteration"]) / float(b.loc[k, "ms_per_iteration"])
             for k in timed]
    if times:
        lo, hi = min(times), max(times)
        span = f"{lo:.1f}" if round(lo, 1) == round(hi, 1) else f"{lo:.1f} to {hi:.1f}"
        at = page.and_list(SHAPE_LABELS.get(s, s) for s in shared)
        out.append(f"Each of these steps, dense and exact, takes {span} times as long there "
                   f"as above ({len(timed)} timings, at the {at} "
                   f"shape{'s' if len(shared) > 1 else ''}).")
    s = shared[0]
    at = f"At the {SHAPE_LABELS.get(s, s)} shape the"
    for step in ("dense", "exact"):
        if (s, step, 1) in both:
            out.append(_bound_text(o, b, s, step, at))
            at = "The"
    k = (s, "exact", 1)
    if k in both:
        out.append(f"On one thread the exact step runs at {float(o.loc[k, 'over_limit']):.2f} "
                   f"times its own limit there and {float(b.loc[k, 'over_limit']):.2f} times "
                   f"above.")
    ks = sorted(k for k in exact if k[0] == s)
    more = [k[2] for k in ks if float(o.loc[k, "vs_dense"]) > float(b.loc[k, "vs_dense"])]
    less = [k[2] for k in ks if float(o.loc[k, "vs_dense"]) < float(b.loc[k, "vs_dense"])]
    where = f"at the {SHAPE_LABELS.get(s, s)} shape"
    if more and less:
        out.append(f"So the exact step gains more over the dense one there on "
                   f"{page.and_list(_threads(t) for t in more)} and less on "
                   f"{page.and_list(_threads(t) for t in less)} {where}: how much the exact "
                   f"step saves is a property of the machine as much as of the design, set by "
                   f"what bounds each step there.")
    elif less:
        out.append(f"So the exact step gains less over the dense one there than above on every "
                   f"thread count measured {where}.")
    elif more:
        out.append(f"So the exact step gains more over the dense one there than above on every "
                   f"thread count measured {where}.")
    return out
