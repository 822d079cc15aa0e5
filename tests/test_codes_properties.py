"""Property-based proofs of the identities of Chapter 1, widths 1..64 and 128.

For every width, two complementary checks:

- ``test_identities_hold_on_random_batches``: seeded batches of 100 users x
  100 items = 10,000 (user, item) pairs per width (more for sparse and dense
  users), so every identity is checked on at least 10,000 random cases per
  width, deterministically.
- ``test_identities_hypothesis``: Hypothesis draws the codes themselves
  (including its edge cases: all -1, all +1, single bits) and shrinks any
  counterexample to a minimal one.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from phdlib import codes as C

WIDTHS = list(range(1, 65)) + [128]
N_USERS, N_ITEMS = 100, 100


def check_identities(users: np.ndarray, items: np.ndarray) -> int:
    """Assert every identity for all pairs; users (a, m), items (b, m) in ±1.

    Returns the number of (user, item) pairs checked.
    """
    m = users.shape[1]
    pu, pi = C.pack(users), C.pack(items)
    pin = pi.negate()
    ham = C.hamming(pu, pi)
    phd_xor_and = C.phd(pu, pi)            # popcount(u XOR (u AND i))
    phd_not = C.phd(pu, pin)               # popcount(u AND NOT i), NOT stored once
    ref = C.phd_reference(users, items)
    # 1. the forms of PHD agree with each other and with the definition
    assert np.array_equal(phd_xor_and, ref)
    assert np.array_equal(phd_not, ref)
    # 2. PHD(u, i) = popcount(u) - popcount(u AND i), AND counted on unpacked codes
    and_count = ((users[:, None, :] == 1) & (items[None, :, :] == 1)).sum(2)
    pc_u = C.popcount(pu)
    assert np.array_equal(phd_not, pc_u[:, None] - and_count)
    assert (phd_not >= 0).all() and (phd_not <= pc_u[:, None]).all()
    # 3. <u, i> = m - 2 d_H(u, i) for ±1 vectors
    ip = users.astype(np.int64) @ items.T.astype(np.int64)
    assert np.array_equal(ip, m - 2 * ham)
    assert np.array_equal(ham, C.hamming_reference(users, items))
    # 4. masked item i~ = u AND i (in {0,1}), back to ±1: <u, i~> = m - 2 PHD(u, i)
    masked = np.where((users[:, None, :] == 1) & (items[None, :, :] == 1), 1, -1)
    ip_masked = np.einsum("am,abm->ab", users.astype(np.int64), masked.astype(np.int64))
    assert np.array_equal(ip_masked, m - 2 * phd_not)
    # 5. asymmetry: PHD(u, i) - PHD(i, u) = popcount(u) - popcount(i),
    #    and Hamming splits into the two directions: d_H = PHD(u,i) + PHD(i,u)
    phd_rev = C.phd(pi, pu.negate()).T     # PHD(i, u), shape (a, b)
    pc_i = C.popcount(pi)
    assert np.array_equal(phd_not - phd_rev, pc_u[:, None] - pc_i[None, :])
    assert np.array_equal(ham, phd_not + phd_rev)
    # 6. disabled bits: flipping item bits where the user is -1 never moves PHD
    for a in range(min(users.shape[0], 3)):
        off = users[a] == -1
        flipped = items.copy()
        flipped[:, off] *= -1
        assert np.array_equal(C.phd(C.pack(users[a]), C.pack(flipped).negate()), phd_not[a])
    # 7. packing round trip
    assert np.array_equal(C.unpack(pu), users) and np.array_equal(C.unpack(pin), items)
    return users.shape[0] * items.shape[0]


@pytest.mark.parametrize("m", WIDTHS)
def test_identities_hold_on_random_batches(m):
    rng = np.random.default_rng(2021 + m)
    checked = 0
    for p_user in (0.5, 0.1, 0.9):  # dense and sparse users exercise disabled bits
        users = np.where(rng.random((N_USERS, m)) < p_user, 1, -1).astype(np.int8)
        items = np.where(rng.random((N_ITEMS, m)) < 0.5, 1, -1).astype(np.int8)
        checked += check_identities(users, items)
    assert checked >= 10_000


def _pm1(m, n):
    return arrays(np.int8, (n, m), elements=st.sampled_from([-1, 1]))


@pytest.mark.parametrize("m", WIDTHS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_identities_hypothesis(m, data):
    users = data.draw(_pm1(m, 4), label="users")
    items = data.draw(_pm1(m, 25), label="items")
    check_identities(users, items)
