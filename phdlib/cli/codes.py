"""``phd export`` (a trained run's codes to one .npz) and ``phd recommend`` (top-k from it)."""
from __future__ import annotations

import sys
from pathlib import Path

from .options import (add_json_flag, dump_json, error_message, fail, input_file_problem, int_in, output_file_problem)

from ..names import TIE_BREAKS  # --tie-break choices (phdlib.serving.ties.RULES)


def _export(args) -> int:
    from ..serving import codes_file
    from .. import results

    problem = output_file_problem("--out", args.out)
    if problem:
        return fail(problem)
    try:
        path = codes_file.export_run(args.run, args.out, data_dir=args.data_dir)
        codes = codes_file.load_codes(path)
    except (results.CorruptRun, ValueError, KeyError, FileNotFoundError) as exc:
        return fail(error_message(exc))
    out = {"out": str(path), "users": len(codes.user_ids), "items": len(codes.item_ids),
           "bits": codes.bits, "distance": codes.distance, "provenance": codes.provenance}
    if args.json:
        dump_json(out)
    else:
        stats = " with the items' training popularity and mean rating" \
            if codes.item_stats is not None else ""
        print(f"{codes.provenance['method']} codes ({codes.bits} bits, ranked by "
              f"{codes.distance}) of {out['users']} users and {out['items']} items{stats} "
              f"written to {path}")
    return 0


def _read_users(args) -> tuple[list[str], list[str]]:
    """The user ids asked for, and where each was given (``--user`` or ``FILE line N``)."""
    users = list(args.user or [])
    where = ["--user"] * len(users)
    if args.users:
        p = Path(args.users)
        problem = input_file_problem("--users", p, "a text file of user ids, one a line")
        if problem:
            raise ValueError(problem)
        try:
            text = p.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            text_line = p.read_bytes()[:exc.start].count(b"\n") + 1
            raise ValueError(f"--users {p}, line {text_line}: not UTF-8 text (expected one user "
                             f"id a line)") from None
        # lines end at LF, CRLF or CR only (str.splitlines would also split at \f, U+2028...)
        raw = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        lines = [(n, ln.strip()) for n, ln in enumerate(raw, 1) if ln.strip()]
        if not lines:
            raise ValueError(f"--users {p}: no user ids ("
                             + ("the file is empty" if not text else "only blank lines")
                             + "; expected one user id a line)")
        nul = next((n for n, u in lines if "\0" in u), None)
        if nul is not None:
            raise ValueError(f"--users {p}, line {nul}: holds a NUL character (expected one "
                             f"user id a line, as text)")
        users += [u for _, u in lines]
        where += [f"--users {p}, line {n}" for n, _ in lines]
    if not users:
        raise ValueError("give --user ID (repeatable) or --users FILE (one id a line)")
    return users, where


def _check_users(codes, users, where) -> None:
    """Every asked-for user is in the codes; else one error counting and naming the unknown."""
    rows = codes.user_rows(users, strict=False)
    bad = [k for k in range(len(users)) if rows[k] < 0]
    if bad:
        kind = "integers" if codes.user_ids.dtype.kind in "iu" else "text"
        more = f"; {len(bad)} of the {len(users)} user ids given are unknown" if len(bad) > 1 \
            else ""
        raise KeyError(f"{where[bad[0]]}: user id {users[bad[0]]!r} is not in the codes "
                       f"({len(codes.user_ids):,} users, ids as {kind}){more}")


def _seen(args, codes):
    """The --exclude-seen pairs matched against the codes (:class:`phdlib.serving.recommend.Exclusions`),
    or None; pairs whose user or item the codes lack are counted and warned about."""
    if not args.exclude_seen:
        return None
    from ..serving import recommend
    from ..data import own

    cols = own.parse_columns(args.columns, ("user", "item")) if args.columns else codes.provenance.get("columns")
    if not cols:
        raise ValueError("--exclude-seen needs --columns user=...,item=... (the codes do not "
                         "record the columns of a ratings file)")
    path = Path(args.exclude_seen)
    problem = input_file_problem("--exclude-seen", path, "a ratings file (CSV, TSV or Parquet)")
    if problem:
        raise ValueError(problem)
    users, items = own.read_pairs(path, cols, args.sep)
    ex = recommend.exclusions(codes, users, items)
    if ex.unknown_user_pairs or ex.unknown_item_pairs:
        parts = []
        if ex.unknown_user_pairs:
            parts.append(f"{ex.unknown_user_pairs:,} name one of {ex.unknown_users:,} users "
                         f"not in the codes (first: {ex.first_unknown_user!r})")
        if ex.unknown_item_pairs:
            parts.append(f"{ex.unknown_item_pairs:,} name one of {ex.unknown_items:,} items "
                         f"not in the codes (first: {ex.first_unknown_item!r})")
        print(f"phd: warning: --exclude-seen {path}: {ex.applied:,} of {ex.pairs:,} rows "
              f"applied; {' and '.join(parts)}; those rows exclude nothing", file=sys.stderr)
    return ex


def _scores(args, codes):
    """The ``--scores`` file as float64 ``(n_items,)`` in the codes' item order: a CSV with
    a header and two columns (item id, score); items it does not list get NaN (last)."""
    import numpy as np
    import pandas as pd

    path = Path(args.scores)
    problem = input_file_problem("--scores", path, "a CSV file with a header: item id, score")
    if problem:
        raise ValueError(problem)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise ValueError(f"--scores {path}: not a CSV file ({' '.join(str(exc).split())[:200]}); "
                         f"expected a header and two columns: item id, score") from None
    if table.shape[1] != 2:
        raise ValueError(f"--scores {path}: {table.shape[1]} columns "
                         f"({', '.join(map(str, table.columns))}); expected two: item id, score")
    values = pd.to_numeric(table.iloc[:, 1], errors="coerce").to_numpy(np.float64)
    bad = np.flatnonzero(np.isnan(values) | np.isinf(values))
    if bad.size:
        raise ValueError(f"--scores {path}, line {int(bad[0]) + 2}: score "
                         f"{table.iloc[int(bad[0]), 1]!r} is not a finite number")
    try:
        rows = codes.item_rows(table.iloc[:, 0].tolist())
    except KeyError as exc:
        raise KeyError(f"--scores {path}: {error_message(exc)}") from None
    if len(np.unique(rows)) != len(rows):
        raise ValueError(f"--scores {path}: an item is listed twice; expected one score an item")
    score = np.full(len(codes.item_ids), np.nan)
    score[rows] = values
    return score


def _tie_rule(args, codes):
    """The tie rule of ``--tie-break`` (with ``--seed``, ``--scores``) for ``codes``."""
    from ..serving import recommend

    if args.tie_break == "id":
        return None
    score = _scores(args, codes) if args.tie_break == "score" else None
    return recommend.tie_rule(codes, args.tie_break, seed=args.seed, score=score)


def _recommend(args) -> int:
    from ..serving import codes_file, recommend

    if args.exclude_seen is None and (args.columns is not None or args.sep is not None):
        return fail(f"{'--columns' if args.columns is not None else '--sep'} goes with "
                    f"--exclude-seen RATINGS (it says how to read that file)")
    if (args.seed is not None) != (args.tie_break == "seeded"):
        return fail("--tie-break seeded needs --seed N" if args.seed is None else
                    f"--seed goes with --tie-break seeded (got --tie-break {args.tie_break})")
    if (args.scores is not None) != (args.tie_break == "score"):
        return fail("--tie-break score needs --scores FILE (item id, score)"
                    if args.scores is None else
                    f"--scores goes with --tie-break score (got --tie-break {args.tie_break})")
    problem = input_file_problem("--codes", args.codes, "a codes file written by phd export")
    if problem:
        return fail(problem)
    try:
        codes = codes_file.load_codes(args.codes)
        users, where = _read_users(args)
        _check_users(codes, users, where)
        rule = _tie_rule(args, codes)
        seen = _seen(args, codes)
        recs = recommend.recommend(codes, users, k=args.k, exclude=seen, tie_break=rule)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        return fail(error_message(exc))
    if args.json:
        dump_json({"codes": str(args.codes), "distance": codes.distance, "k": args.k,
                   "exclude_seen": seen.summary() if seen is not None else None,
                   "users": recs})
    else:
        for r in recs:
            pairs = ", ".join(f"{i} ({d})" for i, d in zip(r["items"], r["distances"]))
            print(f"{r['user']}: {pairs}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("export", help="write a trained run's codes and ids to one .npz file",
                       description="Write the codes of a stored code run (the PATH `phd train "
                                   "--json` prints) with the original user and item ids, the "
                                   "width, the distance and the provenance to one .npz "
                                   "(documented in phdlib.serving.codes_file), with each "
                                   "item's number of training ratings and mean training "
                                   "rating (what phd recommend --tie-break popularity and "
                                   "mean-rating rank ties by) where the run's training split "
                                   "can be rebuilt here.")
    p.add_argument("--run", required=True, metavar="PATH", help="a stored run's folder")
    p.add_argument("--out", required=True, metavar="FILE.npz")
    p.add_argument("--data-dir", default=None,
                   help="where the run's named dataset is (its original ids come from it)")
    add_json_flag(p)
    p.set_defaults(func=_export)

    p = sub.add_parser("recommend", help="top-k items for users from an exported codes file",
                       description="Rank every item for each user by the codes' distance "
                                   "(PHD or Hamming; exact, through phdlib.serving.search.BinaryIndex), "
                                   "nearest first, ties in item order or by --tie-break.")
    p.add_argument("--codes", required=True, metavar="FILE.npz", help="written by phd export")
    p.add_argument("--user", action="append", default=None, metavar="ID",
                   help="a user id (repeatable)")
    p.add_argument("--users", default=None, metavar="FILE", help="a file of user ids, one a line")
    p.add_argument("--k", type=int_in(1), default=10, help="items per user (default 10)")
    p.add_argument("--exclude-seen", default=None, metavar="RATINGS",
                   help="a ratings file (CSV, TSV, Parquet with a header): leave out the items "
                        "each user has rated")
    p.add_argument("--columns", default=None, metavar="MAP",
                   help="with --exclude-seen: user=COL,item=COL (default: the columns the codes "
                        "were trained from)")
    p.add_argument("--sep", default=None, help="with --exclude-seen: the field separator")
    p.add_argument("--tie-break", default="id", choices=TIE_BREAKS,
                   help="which of the items at equal distance come first, at the cut too: id "
                        "(smaller first, the default), popularity (more training ratings), "
                        "mean-rating (higher mean training rating; both need the codes file's "
                        "item_stats, written by phd export), score (higher --scores value), "
                        "seeded (a random order fixed by --seed)")
    p.add_argument("--seed", type=int_in(0), default=None,
                   help="with --tie-break seeded: the seed of the items' random order")
    p.add_argument("--scores", default=None, metavar="FILE",
                   help="with --tie-break score: a CSV with a header, item id and score "
                        "(higher first; items not listed last)")
    add_json_flag(p)
    p.set_defaults(func=_recommend)
