"""The landing page's "What this reproduction finds": a few computed sentences, each linking
to the chapter that shows it in full.

Every sentence is computed from stored runs through the same functions the chapters use
(:func:`phdlib.report.table1`, :mod:`phdlib.studies.ablation`, :mod:`phdlib.report.protocol`,
:mod:`phdlib.report.served_ties`); nothing is written in advance of the numbers. The
sentences are MyST Markdown (bold lead, ``{doc}`` link to the chapter) for
:func:`phdlib.report.page.findings`.
"""
from __future__ import annotations


from ..studies import ablation, travel
from ..serving import codes_file
from .. import methods
from ..evaluation.metrics import METRIC_LABELS
from . import ablation as rablation
from . import protocol, served_ties as rties
from . import travel as rtravel
from .groups import by_method
from .page import num, p_text, pct, seeds_text
from .style import PHD, label
from .table1 import Table1, table1

__all__ = ["paper_claim", "item_mean", "bias_share", "phd_without_retraining",
           "catalogue", "pessimistic_ties", "served_ties", "headline"]

_NAME = METRIC_LABELS["ndcg@10"]


def paper_claim(tables: dict[int, Table1], seeds: int) -> str | None:
    """Does VH_PHD beat every Hamming method under the paper's protocol, by how much, and is
    it significant; the paper's Delta% beside ours. ``tables``: ``{bits: Table1}``."""
    parts, verdicts = [], []
    for b, t in tables.items():
        v = t.values
        if t.missing and PHD in t.missing:
            return None
        ham = [m for m in t.hamming if m not in t.missing]
        if not ham:
            return None
        best = max(ham, key=lambda m: v.loc[m, ("ndcg@10", "ours")])
        ours, paper = t.delta["ours"].get("ndcg@10"), t.delta["paper"].get("ndcg@10")
        above = v.loc[PHD, ("ndcg@10", "ours")] > v.loc[best, ("ndcg@10", "ours")]
        sig = t.marks.loc[PHD, "ndcg@10"] == "*"
        verdicts.append(above and sig)
        parts.append(f"at {b} bits VH_PHD is {pct(ours)} {_NAME} from the best Hamming method "
                     f"({label(best)}; {'significant' if sig else 'not significant'})"
                     + (f", the paper {pct(paper)}" if paper is not None else ""))
    if not parts:
        return None
    lead = ("**The paper's claim holds under its protocol.**" if all(verdicts) else
            "**The paper's claim holds only in part under its protocol.**" if any(verdicts) else
            "**The paper's claim does not hold under its protocol.**")
    return (f"{lead} The paper claims that codes learned for PHD rank a user's rated items "
            f"better than codes learned for the Hamming distance; here " + "; ".join(parts)
            + f" ({seeds_text(seeds)}; paired t-test over users with Bonferroni). "
            "See {doc}`table1`.")


def item_mean(tables: dict[int, Table1]) -> str | None:
    """How the item-mean ranking (one order for every user) compares with the hashing methods."""
    rows = []
    for b, t in tables.items():
        v = t.values
        if "item-mean" not in v.index or "item-mean" in t.missing:
            return None
        hashing = [m for m in methods.names(learns_codes=True, in_paper=True)
                   if m in v.index and m not in t.missing]
        im = v.loc["item-mean", ("ndcg@10", "ours")]
        beaten = [m for m in hashing if v.loc[m, ("ndcg@10", "ours")] < im]
        rows.append((b, im, beaten, hashing))
    if not rows:
        return None
    im = rows[0][1]
    every = all(len(be) == len(h) for _, _, be, h in rows)
    some = any(be for _, _, be, _ in rows)
    lead = ("**No personalisation beats every hashing method.**" if every else
            "**A ranking without personalisation beats some hashing methods.**" if some else
            "**Every hashing method beats the ranking without personalisation.**")
    detail = "; ".join(f"at {b} bits it is above {len(be)} of {len(h)}"
                       + (" (VH_PHD included)" if PHD in be else "") for b, _, be, h in rows)
    return (f"{lead} Ranking every user's items by their mean training rating, the same order "
            f"for all users, scores {_NAME} {num(im)}: {detail}. Under the paper's protocol "
            "only the items a user rated are ranked"
            + (", so much of the score needs no model of the user" if some else "")
            + ". See {doc}`table1` and {doc}`protocol`.")


def bias_share(gaps: dict) -> str | None:
    """The share of the VH -> VH_PHD gap that a per-user training bias closes, with its spread
    over seeds (:func:`phdlib.report.ablation.shares`). ``gaps``: ``{bits:
    ablation.bias_gap(...)}``; None where VH_PHD has no gain over VH to close."""
    shared = rablation.shares(gaps)
    if shared is None:
        return None
    words, parts = shared
    return (f"**A per-user bias closes {words} PHD's gain.** Under PHD a user who switches a "
            "bit off adds one to every item's training score, a per-user offset Hamming codes "
            "cannot express. VH trained with a learned per-user bias, and ranked exactly like "
            f"VH, closes {' and '.join(parts)} of the {_NAME} gap from VH to VH_PHD. See "
            "{doc}`ablation`.")


def phd_without_retraining(reach) -> str | None:
    """How close the best Hamming-trained codes, ranked by PHD, come to VH_PHD
    (:func:`phdlib.report.ablation.reach_parts`)."""
    if reach is None or not len(reach):
        return None
    return ("**PHD ranking without retraining.** Codes learned for the Hamming distance, ranked "
            f"by PHD as they are, against VH_PHD's {_NAME}: "
            f"{'; '.join(rablation.reach_parts(reach))}. See {{doc}}`ablation`.")


def catalogue(tests) -> str | None:
    """VH_PHD against the best Hamming code and against VH when every unrated item is ranked
    (:func:`phdlib.report.protocol.catalogue_tests`, seed 0)."""
    if tests is None or not len(tests):
        return None
    t = tests.xs("ndcg@10", level="metric")
    words = {"better": "significantly ahead", "worse": "significantly behind",
             "no significant difference": "not significantly different"}
    parts, best = [], []
    for (bits, base), r in t.iterrows():
        if r["role"] not in ("best Hamming code", "Hamming twin"):
            continue
        if r["role"] == "best Hamming code":
            best.append(r["verdict"])
        parts.append(f"{num(r['difference'], sign=True)} against {label(base)} at {bits} bits "
                     f"({words[r['verdict']]}, {p_text(r['p'])})")
    if not parts or not best:
        return None
    lead = ("**Over the full catalogue the paper's ordering holds.**"
            if all(v == "better" for v in best) else
            "**Over the full catalogue the ranking reverses.**"
            if all(v == "worse" for v in best) else
            "**Over the full catalogue VH_PHD is not ahead of the best Hamming code.**"
            if not any(v == "better" for v in best) else
            "**Over the full catalogue the paper's ordering holds at some widths only.**")
    return (f"{lead} Ranking every item a user has not rated, as a recommender does, "
            f"VH_PHD's {_NAME} differs by " + "; ".join(parts) + " (one model seed, paired "
            "t-test over users, Bonferroni). See {doc}`protocol`.")


def pessimistic_ties(lead) -> str | None:
    """Who of VH_PHD and VH is ahead when tied items are ranked worst-first
    (:func:`phdlib.report.protocol.leaders`)."""
    if lead is None or not len(lead):
        return None
    parts, flips = [], 0
    for (bits, metric), r in lead.iterrows():
        parts.append(f"{METRIC_LABELS[metric]} at {bits} bits: {r['pessimistic leader']} ahead "
                     f"({num(r['pessimistic'], sign=True)})")
        flips += bool(r["depends on rule"])
    lead_words = (f"**The tie rule decides {flips} of {len(lead)} comparisons.**" if flips else
                  "**The tie rule does not change who is ahead.**")
    return (f"{lead_words} The book's metrics take the expectation over random orders of tied "
            "items. Ranking tied items worst-first instead, VH_PHD against VH: "
            + "; ".join(parts) + ". See {doc}`protocol`.")


def served_ties(counts: dict | None, bits: int) -> str | None:
    """How many adjacent pairs of the served top-k lists tie (:func:`phdlib.report.served_ties.
    served_ties` of VH_PHD's codes)."""
    if not counts:
        return None
    c = counts
    return (f"**Served lists are mostly ties.** In the {c['lists']:,} top-{c['k']} lists of "
            f"VH_PHD's {bits}-bit codes, {c['tied pairs']:,} of {c['pairs']:,} adjacent pairs "
            f"({100 * c['tied share']:.0f}%) are at equal PHD and {c['lists all zero']:,} lists "
            "are all at distance 0, so the order a user sees is whatever breaks the ties (the "
            "item id unless a tie rule is asked for). The book's metrics take the expectation "
            "over ties; a served list cannot. See {doc}`serving` for the tie rules and what "
            "each does to the served order."
            if c["tied share"] >= 0.5 else
            f"**Served lists hold ties.** In the {c['lists']:,} top-{c['k']} lists of VH_PHD's "
            f"{bits}-bit codes, {c['tied pairs']:,} of {c['pairs']:,} adjacent pairs "
            f"({100 * c['tied share']:.0f}%) are at equal PHD. See {{doc}}`serving`.")


def _seed0(runs: dict, widths) -> dict:
    """``{(method, bits): Run}`` of model seed 0 (Table 1's plain cells)."""
    return {(m, b): rs[0] for b in widths for m, rs in by_method(runs, bits=b).items()
            if rs and rs[0].seed == 0}


def headline(runs: dict, split, dataset: str, widths=(32, 64), seeds: int = 1,
             extra=()) -> tuple[list[str], dict]:
    """The landing page's computed findings from Table 1's runs (with arrays).

    runs: ``{Cell: Run}`` of Table 1's part, every seed. extra: more finding sentences
    (from the protocol and serving chapters' functions) appended in order. Returns
    ``(sentences, parts)``: the Markdown sentences (missing inputs leave theirs out) and the
    tables they came from (``tables``, ``gaps``, ``reach``), for a page that wants them.
    """
    tables = {b: table1(runs, dataset, b) for b in widths}
    grouped = rablation.grouped(runs, widths)
    gaps = {b: ablation.bias_gap(grouped, b) for b in widths
            if all((m, b) in grouped for m in ablation.BIAS_ARMS)}
    code_runs = {k: v for k, v in grouped.items()
                 if methods.get(k[0]).learns_codes}
    table, _ = ablation.distance_ablation(code_runs, split)
    reach = ablation.phd_reach(table) if len(table) else None
    gains = travel.gain_tests({(dataset, m, b): rs for (m, b), rs in grouped.items()
                               if m in travel.ARMS["dcf"]})
    seed0 = _seed0(runs, widths)
    cat_tests, lead, ties, top = None, None, None, max(widths)
    if all((m, b) in seed0 for m in (protocol.PHD, protocol.HAMMING) for b in widths):
        names = [m for m in (protocol.PHD, protocol.HAMMING, *methods.hashing_baselines(),
                             "popularity") if all((m, b) in seed0 for b in widths)]
        cat, per_user = protocol.catalogue(seed0, split, list(dict.fromkeys(names)), widths)
        cat_tests = protocol.catalogue_tests(per_user, cat)
        pair = (protocol.PHD, protocol.HAMMING)
        values = protocol.pair_values(seed0, split.test, pair, widths)
        rules = protocol.tie_rule_table(protocol.tie_rule_tables(values, split.test, 1), seed0,
                                        dataset)
        lead = protocol.leaders(rules)
        codes = codes_file.codes_of_run(seed0[(protocol.PHD, top)])
        ties = rties.served_ties(codes.user_codes, codes.item_codes, codes.bits)
    out = [paper_claim(tables, seeds), item_mean(tables), catalogue(cat_tests),
           pessimistic_ties(lead), bias_share(gaps), phd_without_retraining(reach),
           rtravel.headline(gains) if len(gains) else None, served_ties(ties, top), *extra]
    return [s for s in out if s], {"tables": tables, "gaps": gaps, "reach": reach,
                                   "catalogue": cat_tests, "leaders": lead, "ties": ties}
