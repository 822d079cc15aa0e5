"""How a chapter shows what it computed: findings as prose, tables for reading, provenance folded.

A chapter never prints a sentence. It hands its computed statements to
:func:`findings` or :func:`prose`, which return Markdown that the site renders
like the rest of the page (myst-nb parses it as MyST, so ``{doc}`` links and
``$math$`` work); its tables to :func:`table`, which returns a captioned HTML
table in a box that scrolls on its own on a narrow screen; and what a reader
only needs to audit the page (profile, seeds, runs trained or loaded, commit,
timings) to :func:`computed`, a folded "How this page was computed" block.

Formatting rules shared by every table: metric values with four decimals and
no leading zero (``.7267``), mean and standard deviation on one line
(``.7267 ± .0012``, :func:`mean_std`), counts with thousands separators, a
missing value as ``n/a`` (never ``NaN``), booleans as yes/no, the best value of
a column in bold (:func:`best_mask`).
"""
from __future__ import annotations

import html
import re
import time
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd
from IPython.display import HTML, Markdown

from .. import __version__
from ..results.provenance import git_commit

__all__ = ["prose", "findings", "verdict", "table", "best_mask", "mean_std", "num", "pct",
           "p_text", "signed", "and_list", "seeds_text", "count", "computed", "profile_banner",
           "Timer", "NA"]

#: What a table shows for a missing value.
NA = "n/a"

_VERDICT = re.compile(r"\b(AGREES|DISAGREES|NOT RUN)(?: \(([^)]*)\))?:\s*")
_VERDICT_WORDS = {"AGREES": "Agrees with the paper", "DISAGREES": "Differs from the paper",
                  "NOT RUN": "Not run"}


def verdict(line: str) -> str:
    """A computed finding as Markdown: ``"AGREES (finding 1): x"`` -> ``"**Agrees with the
    paper (finding 1).** x"``, wherever in the line the verdict stands; a line without a
    verdict is returned as is."""
    def bold(m: re.Match) -> str:
        head = _VERDICT_WORDS[m.group(1)] + (f" ({m.group(2)})" if m.group(2) else "")
        return f"**{head}.** "

    return _VERDICT.sub(bold, line)


def prose(*paragraphs: str) -> Markdown:
    """Paragraphs of computed text as Markdown (empty ones dropped)."""
    return Markdown("\n\n".join(p.strip() for p in paragraphs if p and p.strip()))


def findings(lines: Iterable[str], intro: str = "") -> Markdown:
    """Computed statements as a bulleted list (verdict words in bold, :func:`verdict`)."""
    items = [f"- {verdict(str(line).strip())}" for line in lines if str(line).strip()]
    return prose(intro, "\n".join(items))


def num(v, digits: int = 4, lead_zero: bool = False, sign: bool = False) -> str:
    """A float with ``digits`` decimals (``.7267`` unless ``lead_zero``); :data:`NA` for NaN/None."""
    if v is None or (isinstance(v, (float, np.floating)) and np.isnan(v)):
        return NA
    s = f"{float(v):{'+' if sign else ''}.{digits}f}"
    if not lead_zero:
        s = re.sub(r"^([+-]?)0\.", r"\1.", s)
    return s.replace("-", "−")


def signed(v, digits: int = 4) -> str:
    """A difference with its sign, ``+.0123`` / ``−.0123``; a value that rounds to zero is
    ``.0000`` without a sign (never ``−.0000``)."""
    if v is not None and np.isfinite(v) and round(abs(float(v)), digits) == 0:
        return num(0.0, digits)
    return num(v, digits, sign=True)


def and_list(parts) -> str:
    """``["a", "b", "c"]`` -> ``"a, b and c"`` (empty: ``""``)."""
    parts = list(parts)
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def article(name: str) -> str:
    """``"a"`` or ``"an"`` before ``name`` as it is said: ``"an AMD EPYC"``, ``"an Intel"``,
    ``"an x86_64"`` and ``"an 8-core"`` (said "ex", "eight"), ``"an 11th Gen"``,
    ``"an unknown"``, ``"a Xeon"``, ``"a Neoverse-V2"``, ``"a 12th Gen"``; a rule of
    thumb for the names of CPUs, not of every word."""
    word = name.strip().split(" ", 1)[0]
    if not word:
        return "a"
    number = re.match(r"\d+", word)
    if number:   # eight, eleven, eighteen, eighty...; 8xx and 18xx thousand
        n = number.group()
        return "an" if n[0] == "8" or n in ("11", "18") or (len(n) in (2, 5, 8) and
                                                             n.startswith("18")) else "a"
    first, rest = word[0], word[1:2]
    if first.upper() in "AEIO" or word.lower().startswith(("unk", "ult")):
        return "an"
    # a letter said on its own ("x86", "RTX", "FPGA", "M2"): ef, aitch, el, em, en, ar, es, ex
    spelled = not rest or not rest.islower()
    return "an" if spelled and first.upper() in "FHLMNRSX" else "a"


def cores_text(provenance: Mapping) -> str | None:
    """The machine a record names in its provenance (keys ``cpus`` and ``cpu``), for a
    sentence or a caption: ``"2 cores of an AMD EPYC 9454 48-Core Processor (family 25,
    model 17)"``; ``"2 cores"`` from a record that does not name its CPU (records written
    before they did); None from one that gives neither."""
    cpus, cpu = provenance.get("cpus"), provenance.get("cpu")
    named = f"{article(cpu)} {cpu}" if cpu else None
    if not cpus:
        return named
    cores = f"{cpus} core{'s' if cpus != 1 else ''}"
    return f"{cores} of {named}" if named else cores


def mean_std(mean, std=np.nan, digits: int = 4, mark: str = "") -> str:
    """``.7267* ± .0012``: the mark sits on the mean; no std shown for one seed (NaN)."""
    if mean is None or np.isnan(mean):
        return NA
    s = num(mean, digits) + mark
    if std is not None and not np.isnan(std):
        s += f"\u00a0±\u00a0{num(std, digits)}"
    return s


def pct(v, digits: int = 1, sign: bool = True) -> str:
    """A percentage: ``+6.3%``; :data:`NA` for NaN."""
    if v is None or np.isnan(v):
        return NA
    return f"{float(v):{'+' if sign else ''}.{digits}f}%".replace("-", "−")


def p_text(p: float) -> str:
    """A p-value for reading: ``p < 0.001``, ``p = 0.003``, ``p = 0.049`` (three decimals below
    0.1, so a value under 0.05 never reads as 0.05), ``p = 0.41``, ``p = 1``; ``n/a`` for NaN."""
    if p is None or np.isnan(p):
        return "n/a"
    if p < 0.001:
        return "p < 0.001"
    if p < 0.1:
        return f"p = {np.floor(p * 1000) / 1000:.3f}"
    return f"p = {p:.2f}".rstrip("0").rstrip(".") if p < 1 else "p = 1"


def seeds_text(n: int) -> str:
    """``"one model seed"``, ``"the mean of 5 model seeds"``."""
    return "one model seed" if n == 1 else f"the mean of {n} model seeds"


def count(v) -> str:
    """An integer with thousands separators: ``100,000,000``; :data:`NA` for NaN."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return NA
    return f"{int(round(float(v))):,}"


def _cell(v, digits: int, lead_zero: bool = False) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return count(v)
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return NA
        if float(v).is_integer() and abs(v) >= 1000:
            return count(v)
        if abs(v) >= 1000:
            return f"{float(v):,.{digits}f}".replace("-", "−")
        return num(v, digits, lead_zero=lead_zero)
    if v is None or v is pd.NA or v is pd.NaT:
        return NA
    return str(v)


def best_mask(values: pd.DataFrame, columns: Iterable | None = None, higher: bool = True,
              groups: Iterable | None = None) -> pd.DataFrame:
    """True where a value is the best of its column (ties all marked), False elsewhere.

    values: numeric frame; columns: which columns take part (default: all);
    higher: the larger value is best; groups: row labels that compete (default:
    all rows), e.g. only the paper's methods.
    """
    mask = pd.DataFrame(False, index=values.index, columns=values.columns)
    rows = list(values.index if groups is None else groups)
    for col in (values.columns if columns is None else columns):
        v = pd.to_numeric(values.loc[rows, col], errors="coerce")
        if v.notna().any():
            best = v.max() if higher else v.min()
            mask.loc[v.index[v == best], col] = True
    return mask


def _label(x) -> str:
    return " ".join(map(str, x)) if isinstance(x, tuple) else str(x)


def table(df: pd.DataFrame, caption: str, bold: pd.DataFrame | None = None,
          formats: Mapping[object, Callable | str] | None = None, digits: int = 4,
          index: bool = True, notes: str = "", lead_zero: bool = False) -> HTML:
    """``df`` as a captioned HTML table for reading, in a box that scrolls on its own.

    Values are formatted per column by ``formats`` (a callable or a format
    string) and otherwise by type (:func:`num` with ``digits``, :func:`count`,
    yes/no, :data:`NA`); already formatted strings are kept. Metric values lose their
    leading zero (``.7267``); ``lead_zero`` keeps it for other quantities (``0.47`` min). ``bold``: a frame
    of the same labels, True where the cell is set in bold (:func:`best_mask`).
    ``notes``: a line under the table (plain text).
    """
    formats = dict(formats or {})

    def one(v, f) -> str:
        missing = v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))
        if f is None:
            return _cell(v, digits, lead_zero)
        if missing:
            return NA
        return f(v) if callable(f) else f.format(v)

    # built column by column, by position: labels in reading order need no sorted index
    shown = pd.DataFrame({j: [html.escape(one(v, formats.get(col))) for v in df.iloc[:, j]]
                          for j, col in enumerate(df.columns)}, index=df.index)
    shown.columns = df.columns
    if bold is not None:
        b = bold.astype(bool).reindex(index=df.index, columns=df.columns, fill_value=False)
        shown = shown.where(~b.to_numpy(), "<strong>" + shown.astype(str) + "</strong>")
    shown.index = [html.escape(_label(i)) for i in shown.index] if not isinstance(
        shown.index, pd.MultiIndex) else shown.index.map(lambda t: tuple(html.escape(str(x)) for x in t))
    if isinstance(shown.columns, pd.MultiIndex):
        shown.columns = shown.columns.map(lambda t: tuple(html.escape(str(x)) for x in t))
    else:
        shown.columns = [html.escape(str(c)) for c in shown.columns]
    styler = shown.style.set_table_attributes('class="phd-table"')
    if not index:
        styler = styler.hide(axis="index")
    body = styler.to_html()
    # the caption sits above the scrolling box, so it wraps with the page, not the table
    head = f'<p class="phd-caption">{html.escape(caption)}</p>'
    foot = f'<p class="phd-table-note">{html.escape(notes)}</p>' if notes else ""
    return HTML(f'<div class="phd-table-block">{head}<div class="phd-table-wrap">{body}</div>'
                f'{foot}</div>')


def profile_banner(profile: str, note: str = "") -> Markdown | None:
    """A visible warning on a page built with the quick profile (None for the full profile).

    ``note`` (what the quick profile changes per method,
    :func:`phdlib.experiments.profile_note`) is not shown here: it belongs in the page's
    :func:`computed` block.
    """
    if profile == "full":
        return None
    text = ("**Reduced settings (profile 'quick'), not the paper's protocol.** Hyper-parameters "
            "are fixed, tuning grids are skipped and training is shorter, so the numbers on this "
            "page check that the code runs; they are not comparable to the paper's. The folded "
            "block at the end of the page lists what changes per method.")
    return Markdown(f":::{{warning}}\n{text}\n:::")


class Timer:
    """Wall time of the page so far, for :func:`computed` (start it in the setup cell)."""

    def __init__(self):
        self.start = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start


def _runs_line(status: pd.DataFrame) -> str:
    counts = status["status"].value_counts().to_dict()
    trained = status.loc[status["status"] == "ran", "seconds"].sum()
    parts = [f"{v:,} {k}" for k, v in sorted(counts.items())]
    return ", ".join(parts) + (f" (training in this build: {trained:,.0f} s)" if trained else "")


def computed(dataset: str | None = None, profile: str | None = None, seeds=None,
             status: pd.DataFrame | None = None, timer: Timer | None = None,
             details: Mapping[str, object] | None = None, notes: Iterable[str] = ()) -> HTML:
    """The folded "How this page was computed" block that ends a chapter.

    dataset, profile, seeds: what the page ran on; status: the runs table of
    :func:`phdlib.experiments.ensure` (how many were trained now, how many
    loaded from the store); timer: the page's :class:`Timer`; details: more
    rows (name: value); notes: paragraphs of plain text (how a number was
    measured, the profile note). The git commit and the library version are
    always shown.
    """
    rows: list[tuple[str, str]] = []
    if dataset:
        rows.append(("dataset", str(dataset)))
    if profile:
        rows.append(("profile", str(profile)))
    if seeds is not None:
        s = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else list(seeds)
        rows.append(("model seeds", ", ".join(map(str, s))))
    if status is not None and len(status):
        rows.append(("runs", _runs_line(status)))
    for k, v in (details or {}).items():
        rows.append((str(k), str(v)))
    if timer is not None:
        rows.append(("page executed in", f"{timer.seconds:,.1f} s"))
    rows.append(("phdlib", __version__))
    rows.append(("commit", git_commit() or "unknown (not a git checkout)"))
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    paras = "".join("<p>" + html.escape(n.strip()).replace("\n", "<br>") + "</p>"
                    for n in notes if n and n.strip())
    return HTML('<details class="phd-computed"><summary>How this page was computed</summary>'
                f'<table class="phd-provenance">{body}</table>{paras}</details>')
