"""The chapter "Hamming space and the projected dissimilarity": its numerical checks.

- :func:`identity_checks`: every identity of the chapter checked on seeded
  random ±1 codes, one row per (identity, width);
- :func:`identity_findings`: those checks as plain sentences;
- :func:`summary_markdown`: the identities, their uses and checks as a Markdown list;
- :func:`bit_string`: a ±1 code as the string of its bits.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import codes as C

__all__ = ["IDENTITIES", "identity_checks", "identity_findings", "summary_markdown", "bit_string"]

#: The identities the chapter states, in order: key -> (formula in MyST math,
#: where the book relies on it).
IDENTITIES: dict[str, tuple[str, str]] = {
    "xor-and": (r"$\mathrm{PHD}(u,i) = \mathrm{popcount}(u \oplus (u \wedge i))$",
                "PHD as the paper defines it"),
    "not": (r"$\mathrm{PHD}(u,i) = \mathrm{popcount}(u \wedge \lnot i)$",
            "the search kernels store $\\lnot i$ once"),
    "subtract": (r"$\mathrm{PHD}(u,i) = \mathrm{popcount}(u) - \mathrm{popcount}(u \wedge i)$",
                 "ranking for one user is a binary inner product"),
    "bound": (r"$\mathrm{PHD}(u,i) \le \mathrm{popcount}(u)$",
              "a sparse user code ranks coarsely"),
    "disabled": ("Flipping the item bits where $u = -1$ leaves PHD unchanged",
                 "what the user code means"),
    "hamming-ip": (r"$\langle u, i\rangle = m - 2\,d_H(u,i)$", "training VH"),
    "phd-ip": (r"$\langle u, \tilde\imath\rangle = m - 2\,\mathrm{PHD}(u,i)$",
               "training VH_PHD"),
    "masked": (r"$d_H(u, \tilde\imath) = \mathrm{PHD}(u,i)$", "training VH_PHD"),
}


def bit_string(code) -> str:
    """A ±1 (or 0/1) code as its bits, dimension 1 first: ``[1, -1, 1]`` -> ``"101"``."""
    return "".join("1" if x > 0 else "0" for x in np.asarray(code).ravel())


def identity_checks(seed: int = 0, n_items: int = 10_000, widths=(8, 32, 64, 100, 128),
                    n_users: int = 3) -> pd.DataFrame:
    """Check every identity of :data:`IDENTITIES` on seeded random ±1 codes.

    The PHD forms, the bound and the disabled bits are checked at 64 bits on
    ``n_users`` x ``n_items`` (user, item) pairs against the NumPy reference
    (:func:`phdlib.codes.phd_reference`) or a count on the unpacked codes; the
    inner-product identities at every width of ``widths`` on one user and
    ``n_items`` items.

    Returns one row per (identity, width): columns ``identity`` (a key of
    :data:`IDENTITIES`), ``bits`` (int), ``pairs`` (int, the (user, item)
    pairs compared) and ``holds`` (bool, True when it holds on every pair).
    """
    rng = np.random.default_rng(seed)
    rows = []

    def add(key, m, pairs, ok):
        rows.append({"identity": key, "bits": int(m), "pairs": int(pairs), "holds": bool(ok)})

    m = 64
    users = rng.choice([-1, 1], size=(n_users, m))
    items = rng.choice([-1, 1], size=(n_items, m))
    pu, pi = C.pack(users), C.pack(items)
    ref = C.phd_reference(users, items)
    n = ref.size
    add("xor-and", m, n, np.array_equal(C.phd(pu, pi), ref))
    lhs = C.phd(pu, pi.negate())
    add("not", m, n, np.array_equal(lhs, ref))
    and_count = ((users[:, None, :] == 1) & (items[None, :, :] == 1)).sum(axis=2)
    add("subtract", m, n, np.array_equal(lhs, C.popcount(pu)[:, None] - and_count))
    add("bound", m, n, bool((lhs <= C.popcount(pu)[:, None]).all()))
    ok = True
    for k in range(n_users):
        flipped = items.copy()
        flipped[:, users[k] == -1] *= -1
        a = C.pack(users[k])
        ok &= np.array_equal(C.phd(a, pi), C.phd(a, C.pack(flipped)))
    add("disabled", m, n, ok)
    for m in widths:
        u = rng.choice([-1, 1], size=m)
        it = rng.choice([-1, 1], size=(n_items, m))
        pu1, pit = C.pack(u), C.pack(it)
        masked = np.where((u == 1) & (it == 1), 1, -1)  # u AND i, back to ±1
        add("hamming-ip", m, n_items, np.array_equal(it @ u, m - 2 * C.hamming(pu1, pit)))
        add("phd-ip", m, n_items,
            np.array_equal(masked @ u, m - 2 * C.phd(pu1, pit.negate())))
        add("masked", m, n_items, np.array_equal(C.hamming(pu1, C.pack(masked)), C.phd(pu1, pit)))
    return pd.DataFrame(rows, columns=["identity", "bits", "pairs", "holds"])


def identity_findings(checks: pd.DataFrame) -> list[str]:
    """Plain sentences on :func:`identity_checks`: what held, on how many pairs, what failed."""
    total = int(checks["pairs"].sum())
    failed = checks[~checks["holds"]]
    widths = sorted(set(checks["bits"]))
    out = []
    if failed.empty:
        out.append(f"All {checks['identity'].nunique()} identities of this chapter hold on every "
                   f"random code pair checked: {total:,} comparisons in all, at "
                   f"{', '.join(map(str, widths))} bits.")
    else:
        for key, rows in failed.groupby("identity", sort=False):
            out.append(f"FAILS: {IDENTITIES[key][0]} does not hold at "
                       f"{', '.join(map(str, rows['bits']))} bits.")
    return out


def summary_markdown(checks: pd.DataFrame) -> str:
    """A Markdown list of :data:`IDENTITIES`: each identity, where the book uses it,
    and on how many random pairs at which widths :func:`identity_checks` found it
    to hold (a list, not a table, so that it wraps on a narrow screen)."""
    lines = []
    for key, (formula, use) in IDENTITIES.items():
        rows = checks[checks["identity"] == key]
        if rows.empty:
            checked = "not checked"
        else:
            verdict = "holds" if rows["holds"].all() else "**fails**"
            bits = ", ".join(map(str, rows["bits"]))
            checked = f"{verdict} on {int(rows['pairs'].sum()):,} pairs ({bits} bits)"
        lines.append(f"- {formula}. Used for: {use}. Checked: {checked}.")
    return "\n".join(lines)
