"""Per-user ranking metrics (NDCG@k, MRR) over flat, user-grouped arrays.

The public entry point is :func:`phdlib.evaluation.metrics.evaluate`, which validates its
inputs, groups the ratings by user and calls :func:`evaluate_segments`. The
per-user reference implementation in :mod:`phdlib.evaluation.metrics` (plain NumPy) is
the specification; the tests check that this kernel equals it.

Tie modes (``mode``):

- ``MODE_EXPECTED`` (0): the exact expectation over all orderings of tied
  items (McSherry & Najork, ECIR 2008);
- ``MODE_AS_GIVEN`` (1): ties keep the order of the segment (stable sort), or
  of a ``tiebreak`` array where :func:`evaluate_segments` is given one;
- ``MODE_OPTIMISTIC`` (2): within a tie, higher ratings first;
- ``MODE_PESSIMISTIC`` (3): within a tie, lower ratings first.

The catalogue's counting kernels (:func:`catalogue_expected`,
:func:`catalogue_expected_shared`) share this file's helpers
(:func:`expected_reciprocal_rank`, :func:`_kmax`) and live beside them on
purpose: Numba's cache (``cache=True``) checks only the file a kernel is
defined in, so a kernel calling another file's code could be served stale
after that file changes.
"""
from __future__ import annotations

import numba as nb
import numpy as np

MODE_EXPECTED = 0
MODE_AS_GIVEN = 1
MODE_OPTIMISTIC = 2
MODE_PESSIMISTIC = 3


@nb.njit(cache=True)
def expected_reciprocal_rank(a, g, r):
    """E[1 / rank] of the first of ``r`` marked items among ``g`` tied items.

    The tie group occupies the 0-based positions ``a .. a + g - 1``; its order
    is uniformly random. The first marked item sits at offset ``x`` with
    probability ``C(g - 1 - x, r - 1) / C(g, r)``, ``x = 0 .. g - r``.
    Returns a float64.
    """
    p = r / g
    total = 0.0
    for x in range(g - r + 1):
        total += p / (a + 1 + x)
        if x < g - r:
            p *= (g - r - x) / (g - 1 - x)
    return total


@nb.njit(cache=True, inline="always")
def _top(rr, kmax):
    """The ``min(max(kmax, 1), n)`` largest of ``rr`` (float64 ``(n,)``, ``n >= 1``),
    largest first: the values of the first places of the sorted ratings, found by
    insertion into a buffer of that size instead of sorting the row (at least one,
    the largest, which the reciprocal rank reads)."""
    n = rr.shape[0]
    m = min(max(kmax, 1), n)
    top = np.empty(m, dtype=np.float64)
    c = 0
    for p in range(n):
        x = rr[p]
        if c == m:
            if not x > top[m - 1]:
                continue
            q = m - 1
        else:
            q = c
            c += 1
        while q > 0 and top[q - 1] < x:
            top[q] = top[q - 1]
            q -= 1
        top[q] = x
    return top


@nb.njit(cache=True, inline="always")
def _sort_tie(rr, a, b, descending):
    """Sort ``rr[a:b]`` in place, ascending (or descending): by insertion for a tie of up
    to 32 items (no allocation), else by ``np.sort``; the same values in the same places."""
    if b - a > 32:
        grp = np.sort(rr[a:b].copy())
        for p in range(b - a):
            rr[a + p] = grp[b - a - 1 - p] if descending else grp[p]
        return
    for p in range(a + 1, b):
        x = rr[p]
        q = p
        if descending:
            while q > a and rr[q - 1] < x:
                rr[q] = rr[q - 1]
                q -= 1
        else:
            while q > a and rr[q - 1] > x:
                rr[q] = rr[q - 1]
                q -= 1
        rr[q] = x


@nb.njit(cache=True, inline="always")
def _segment_order(seg_key, seg_tb):
    """The stable order of one segment by its keys (float64 ``(n,)``), ties in the order of
    ``seg_tb`` (int64, distinct) where it is not empty, else in place order: int64
    ``(n,)``. Keys that are whole numbers whose largest less smallest is at most
    ``4 n + 64`` (code distances) are placed by counting (:func:`group_stable`, no
    comparisons); any other keys are merge-sorted. Both are stable, so the order is the
    same."""
    n = seg_key.shape[0]
    lo = np.inf
    hi = -np.inf
    whole = True
    for p in range(n):
        x = seg_key[p]
        if x != np.floor(x):   # NaN fails too
            whole = False
            break
        lo = min(lo, x)
        hi = max(hi, x)
    counted = whole and hi - lo <= 4.0 * n + 64.0
    if seg_tb.shape[0] == 0:
        if not counted:
            return np.argsort(seg_key, kind="mergesort")
        ik = np.empty(n, dtype=np.int64)
        for p in range(n):
            ik[p] = int(seg_key[p] - lo)
        return group_stable(ik, 0, int(hi - lo))
    first = np.argsort(seg_tb)
    if not counted:
        return first[np.argsort(seg_key[first], kind="mergesort")]
    ik = np.empty(n, dtype=np.int64)
    for q in range(n):
        ik[q] = int(seg_key[first[q]] - lo)
    return first[group_stable(ik, 0, int(hi - lo))]


@nb.njit(cache=True, parallel=True)
def evaluate_segments(key, rating, starts, ks, disc, mode, out_ndcg, out_mrr, tiebreak):
    """NDCG@k for each k in ``ks`` and MRR, one row per segment (user).

    key: float64 (N,), ranking key, smaller ranks first (a dissimilarity, or
        minus a score); rating: float64 (N,), the relevance (gain 2^r - 1);
    starts: int64 (U + 1,), segment u is ``[starts[u], starts[u + 1])``, each
        non-empty; ks: int64 (K,), cut-offs >= 1; disc: float64 (max(ks),),
        the discount of each 0-based position; mode: see the module docstring;
    out_ndcg: float64 (U, K), written; out_mrr: float64 (U,), written;
    tiebreak: int64 (N,) distinct values, or empty: when given, the order of
    ``MODE_AS_GIVEN`` within a tie is by ``tiebreak``, not by position (the
    seeded random rule: each pair's place in a permutation of all pairs, so the
    pairs need not be permuted and grouped again).
    A segment whose ideal DCG is 0 (every gain 0) gets NDCG 0. Segments are independent
    and run in parallel (``prange``): the numbers do not depend on the threads.
    """
    n_users = starts.shape[0] - 1
    nk = ks.shape[0]
    kmax = _kmax(ks)
    for u in nb.prange(n_users):
        s = starts[u]
        e = starts[u + 1]
        n = e - s
        seg_key = key[s:e]
        order = _segment_order(seg_key, tiebreak[s:e])
        kk = np.empty(n, dtype=np.float64)
        rr = np.empty(n, dtype=np.float64)
        for p in range(n):
            kk[p] = seg_key[order[p]]
            rr[p] = rating[s + order[p]]
        # ideal ranking: the largest ratings in decreasing order
        ideal = _top(rr, kmax)
        maxr = ideal[0]
        # order within ties for the deterministic rules
        if mode == MODE_OPTIMISTIC or mode == MODE_PESSIMISTIC:
            a = 0
            while a < n:
                b = a + 1
                while b < n and kk[b] == kk[a]:
                    b += 1
                if b - a > 1:
                    _sort_tie(rr, a, b, mode == MODE_OPTIMISTIC)
                a = b
        for j in range(nk):
            m = min(ks[j], n)
            idcg = 0.0
            for p in range(m):
                idcg += (2.0 ** ideal[p] - 1.0) * disc[p]
            out_ndcg[u, j] = idcg  # divided below
        if mode == MODE_EXPECTED:
            dcg = np.zeros(nk)
            mrr = -1.0
            a = 0
            while a < n:
                b = a + 1
                while b < n and kk[b] == kk[a]:
                    b += 1
                g = b - a
                if a < kmax:
                    gsum = 0.0
                    for p in range(a, b):
                        gsum += 2.0 ** rr[p] - 1.0
                    for j in range(nk):
                        top = min(b, ks[j])
                        if a < top:
                            dsum = 0.0
                            for p in range(a, top):
                                dsum += disc[p]
                            dcg[j] += gsum * dsum / g
                if mrr < 0.0:
                    r = 0
                    for p in range(a, b):
                        if rr[p] == maxr:
                            r += 1
                    if r > 0:
                        mrr = expected_reciprocal_rank(a, g, r)
                if mrr >= 0.0 and b >= kmax:
                    break
                a = b
            for j in range(nk):
                idcg = out_ndcg[u, j]
                out_ndcg[u, j] = dcg[j] / idcg if idcg > 0.0 else 0.0
            out_mrr[u] = mrr
        else:
            for j in range(nk):
                m = min(ks[j], n)
                got = 0.0
                for p in range(m):
                    got += (2.0 ** rr[p] - 1.0) * disc[p]
                idcg = out_ndcg[u, j]
                out_ndcg[u, j] = got / idcg if idcg > 0.0 else 0.0
            for p in range(n):
                if rr[p] == maxr:
                    out_mrr[u] = 1.0 / (p + 1)
                    break


@nb.njit(cache=True)
def group_stable(user, lo, hi):
    """``np.argsort(user, kind="stable")`` of integers ``user`` in ``lo..hi``, by counting.

    user: int64 (N,), every value in ``lo..hi`` (the caller's min and max: nothing is
    checked here); returns int64 (N,): the positions grouped by user in increasing
    order, each user's in their order in ``user`` (the one stable order). O(N + hi - lo)
    time, against a comparison sort's O(N log N).
    """
    n = user.shape[0]
    start = np.zeros(hi - lo + 2, dtype=np.int64)
    for i in range(n):
        start[user[i] - lo + 1] += 1
    for v in range(1, start.shape[0]):
        start[v] += start[v - 1]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        v = user[i] - lo
        order[start[v]] = i
        start[v] += 1
    return order


@nb.njit(cache=True, inline="always")
def _kmax(ks):
    """The largest cut-off of ``ks``."""
    kmax = 0
    for j in range(ks.shape[0]):
        if ks[j] > kmax:
            kmax = ks[j]
    return kmax


@nb.njit(cache=True, inline="always")
def _row_tests(keyrow, titem, trel, s, t):
    """A row's test keys and ratings (float64 ``(t,)`` each): items ``titem[s:s + t]``
    read from ``keyrow``, the row's keys of every item."""
    tk = np.empty(t, dtype=np.float64)
    tr = np.empty(t, dtype=np.float64)
    for q in range(t):
        tk[q] = keyrow[titem[s + q]]
        tr[q] = trel[s + q]
    return tk, tr


@nb.njit(cache=True, inline="always")
def _expected_row(b, tk, tr, uk, eq, below, n, ks, disc, kmax, out_ndcg, out_mrr, out_n):
    """Row ``b``'s expected-tie NDCG@k and MRR from its counts: ``tk`` / ``tr`` the
    test items' keys and ratings, ``uk`` their distinct keys (sorted), ``eq[j]`` the
    kept items with key ``uk[j]`` (test items included), ``below[j]`` those with a key
    between ``uk[j - 1]`` and ``uk[j]`` (``below[0]``: below ``uk[0]``), ``n`` the
    kept items."""
    t = tk.shape[0]
    nu = uk.shape[0]
    nk = ks.shape[0]
    gsum = np.zeros(nu)
    rtop = np.zeros(nu, dtype=np.int64)
    ideal = np.sort(tr.copy())
    maxr = ideal[t - 1]
    for q in range(t):
        j = np.searchsorted(uk, tk[q])
        gsum[j] += 2.0 ** tr[q] - 1.0
        if tr[q] == maxr:
            rtop[j] += 1
    for j in range(nk):
        m = min(ks[j], t)
        idcg = 0.0
        for p in range(m):
            idcg += (2.0 ** ideal[t - 1 - p] - 1.0) * disc[p]
        out_ndcg[b, j] = idcg
    dcg = np.zeros(nk)
    mrr = -1.0
    a = 0
    for j in range(nu):
        a += below[j]
        g = eq[j]
        if a < kmax:
            for c in range(nk):
                top = min(a + g, ks[c])
                if a < top:
                    dsum = 0.0
                    for p in range(a, top):
                        dsum += disc[p]
                    dcg[c] += gsum[j] * dsum / g
        if mrr < 0.0 and rtop[j] > 0:
            mrr = expected_reciprocal_rank(a, g, rtop[j])
        a += g
    for c in range(nk):
        idcg = out_ndcg[b, c]
        out_ndcg[b, c] = dcg[c] / idcg if idcg > 0.0 else 0.0
    out_mrr[b] = mrr
    out_n[b] = n


#: :func:`catalogue_expected` counts a row of non-integer keys against its distinct test
#: keys one key at a time (:func:`_count_linear`, a vector loop over the row) up to this
#: many of them, and by a binary search per item past it.
LINEAR_MAX = 512


@nb.njit(cache=True, inline="always")
def _count_linear(keyrow, keeprow, uk, eq, below, buf):
    """:func:`catalogue_expected`'s counts of one row by comparisons only: the kept items
    with a key at most the largest test key go to ``buf`` (scratch, ``keyrow``'s length
    and dtype), then, for each distinct test key ``uk[j]`` (sorted), the items below it
    and at most it are counted, branch-free; ``eq``, ``below`` as the search's. Returns
    the kept items. The same counts as the search: for every item ``x`` the
    comparisons ``x < uk[j]`` and ``x <= uk[j]`` decide where it goes."""
    nu = uk.shape[0]
    hi = uk[nu - 1]
    n = 0
    c = 0
    for i in range(keyrow.shape[0]):   # stored always, kept when it counts
        x = keyrow[i]
        k = keeprow[i]
        n += k
        buf[c] = x
        c += k & (x <= hi)
    done = 0                            # items at most the previous test key
    for j in range(nu):
        u = uk[j]
        lt = 0
        le = 0
        for i in range(c):
            x = buf[i]
            lt += x < u
            le += x <= u
        below[j] = lt - done
        eq[j] = le - lt
        done = le
    return n


@nb.njit(cache=True, parallel=True)
def catalogue_expected(key, keep, tptr, titem, trel, ks, disc, out_ndcg, out_mrr, out_n,
                       int_max=-1, linear_max=LINEAR_MAX):
    """Expected-tie NDCG@k and MRR of a block of users over the full catalogue.

    The same numbers as :func:`evaluate_segments` (``MODE_EXPECTED``) on each
    row's kept items, where every kept item outside the user's test set has
    relevance 0, without sorting the row: an item of relevance 0 only moves
    the positions of the test items' tie groups, so it is enough to count,
    per distinct test key, the kept items with a smaller key and with the same
    key: for up to ``linear_max`` distinct test keys, two comparisons of every
    kept item with each (:func:`_count_linear`, vector loops without branches:
    at the ML-10M shape, 71 test items a user on average, a third of the time
    of the search); past that, a binary search among the row's test keys per
    item.

    key: float64 (B, I), the ranking key of every item for each row (smaller
        first), or an integer array when ``int_max >= 0``; keep: bool (B, I), the
        items ranked (the test items among them);
    tptr: int64 (B + 1,), titem: int64, trel: float64 (> 0): row b's test items
        and ratings are ``[tptr[b], tptr[b + 1])``, at least one per row;
    ks, disc: as :func:`evaluate_segments`; out_ndcg: float64 (B, K),
    out_mrr: float64 (B,), out_n: int64 (B,) (items ranked), written;
    int_max: when >= 0, every key is an integer in ``0..int_max`` (a code
    distance), and the items are counted in a histogram of the key values
    instead (no search); linear_max: the most distinct test keys a row of
    non-integer keys is counted against by comparisons (the first paragraph;
    default :data:`LINEAR_MAX`).
    """
    n_rows, n_items = key.shape
    kmax = _kmax(ks)
    for b in nb.prange(n_rows):
        s = tptr[b]
        t = tptr[b + 1] - s
        tk, tr = _row_tests(key[b], titem, trel, s, t)
        uk = np.unique(tk)
        nu = uk.shape[0]
        eq = np.zeros(nu, dtype=np.int64)
        below = np.zeros(nu + 1, dtype=np.int64)  # keys between uk[j - 1] and uk[j]
        n = 0
        if int_max >= 0:
            hist = np.zeros(int_max + 2, dtype=np.int64)
            for i in range(n_items):
                if keep[b, i]:
                    n += 1
                    hist[int(key[b, i])] += 1
            v = 0  # walk the histogram once, in step with the sorted test keys
            for j in range(nu):
                kv = int(uk[j])
                while v < kv:
                    below[j] += hist[v]
                    v += 1
                eq[j] = hist[kv]
                v = kv + 1
        elif nu <= linear_max:
            buf = np.empty(n_items, dtype=key.dtype)
            n = _count_linear(key[b], keep[b], uk, eq, below, buf)
        else:
            lo = uk[0]
            hi = uk[nu - 1]
            for i in range(n_items):
                if keep[b, i]:
                    n += 1
                    x = key[b, i]
                    if x > hi:  # after every test item: moves none of them
                        continue
                    if x < lo:
                        below[0] += 1
                        continue
                    j = np.searchsorted(uk, x)
                    if j < nu and uk[j] == x:
                        eq[j] += 1
                    else:
                        below[j] += 1
        _expected_row(b, tk, tr, uk, eq, below, n, ks, disc, kmax, out_ndcg, out_mrr, out_n)


@nb.njit(cache=True, parallel=True)
def catalogue_expected_shared(key, sorted_key, xptr, xitem, tptr, titem, trel, ks, disc,
                              out_ndcg, out_mrr, out_n):
    """:func:`catalogue_expected` where every row ranks by the same key.

    A model whose values do not depend on the user (one score per item)
    ranks every row's kept items by one key, so a row's counts are the whole
    catalogue's, from ``sorted_key`` by binary search, less the row's left-out
    items, one by one: the same counts as the row's pass over every item, in
    time of its test and left-out items, not of the catalogue.

    key: float64 (I,), the ranking key of every item (smaller first);
    sorted_key: ``np.sort(key)``; xptr: int64 (B + 1,), xitem: int64, row b's
    left-out items (those not ranked) ``[xptr[b], xptr[b + 1])``, none of them
    a test item of the row; tptr, titem, trel, ks, disc, out_*: as
    :func:`catalogue_expected`.
    """
    n_rows = tptr.shape[0] - 1
    n_items = key.shape[0]
    kmax = _kmax(ks)
    for b in nb.prange(n_rows):
        s = tptr[b]
        t = tptr[b + 1] - s
        tk, tr = _row_tests(key, titem, trel, s, t)
        uk = np.unique(tk)
        nu = uk.shape[0]
        eq = np.zeros(nu, dtype=np.int64)
        below = np.zeros(nu + 1, dtype=np.int64)
        prev = 0  # items with a key <= the previous distinct test key
        for j in range(nu):
            lo = np.searchsorted(sorted_key, uk[j])                 # key < uk[j]
            hi = np.searchsorted(sorted_key, uk[j], side="right")   # key <= uk[j]
            below[j] = lo - prev
            eq[j] = hi - lo
            prev = hi
        n = n_items
        lo_key = uk[0]
        hi_key = uk[nu - 1]
        for q in range(xptr[b], xptr[b + 1]):
            n -= 1
            x = key[xitem[q]]
            if x > hi_key:
                continue
            if x < lo_key:
                below[0] -= 1
                continue
            j = np.searchsorted(uk, x)
            if j < nu and uk[j] == x:
                eq[j] -= 1
            else:
                below[j] -= 1
        _expected_row(b, tk, tr, uk, eq, below, n, ks, disc, kmax, out_ndcg, out_mrr, out_n)
