"""SumTree against a plain dict-of-priorities reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.replays.sum_tree import SumTree


class ReferenceTree:
    """Priorities in a dict; validity from the unwrapped row each slot last held."""

    def __init__(self, T, B, off_backward, off_forward):
        self.T, self.B, self.ob, self.of = T, B, off_backward, off_forward
        self.priority = {}  # (t, b) -> priority
        self.last_row = {}  # t -> unwrapped row last written there
        self.count = 0

    def advance(self, values):  # values [T_new, B]
        for row_values in values:
            t = self.count % self.T
            self.last_row[t] = self.count
            for b in range(self.B):
                self.priority[(t, b)] = float(row_values[b])
            self.count += 1

    def update(self, t, b, value):
        self.priority[(t, b)] = float(value)

    def valid(self, t):
        u = self.last_row.get(t)
        return (u is not None and u >= self.count - self.T + self.of
                and u < self.count - self.ob)

    def weights(self):
        w = np.zeros((self.T, self.B))
        for (t, b), p in self.priority.items():
            if self.valid(t):
                w[t, b] = p
        return w


def check_tree(tree, ref):
    assert np.array_equal(tree.leaf_values(), ref.weights())
    internal = np.arange(tree.top.start, tree.n_leaves)  # Each is its children's sum.
    assert np.array_equal(tree.tree[internal], tree.tree[2 * internal] + tree.tree[2 * internal + 1])
    assert np.all(tree.tree[tree.n_leaves + tree.size:] == 0)  # Padding never gets weight.
    assert tree.total == pytest.approx(ref.weights().sum(), rel=1e-12, abs=1e-12)
    assert tree.count == ref.count


@st.composite
def tree_programs(draw):
    T = draw(st.integers(2, 300))
    B = draw(st.integers(1, 9))  # Up to 2700 leaves: up to 2 binary levels below the top.
    ob = draw(st.integers(0, T - 1))
    of = draw(st.integers(0, T - 1 - ob))
    ops = draw(st.lists(st.one_of(
        st.tuples(st.just("advance"), st.integers(1, T), st.booleans()),
        st.tuples(st.just("update"), st.integers(1, 10)),
    ), min_size=1, max_size=12))
    return T, B, ob, of, ops, draw(st.integers(0, 2**16))


@settings(max_examples=150, deadline=None)
@given(tree_programs())
def test_tree_matches_reference_after_any_advances_and_updates(program):
    T, B, ob, of, ops, seed = program
    rng = np.random.default_rng(seed)
    tree = SumTree(T, B, ob, of, default_value=1.5)
    ref = ReferenceTree(T, B, ob, of)
    for op in ops:
        if op[0] == "advance":
            _, T_new, given_values = op
            values = rng.uniform(0, 3, size=(T_new, B)) if given_values else None
            tree.advance(T_new, values)
            ref.advance(np.full((T_new, B), 1.5) if values is None else values)
        else:
            k = op[1]  # Batched update, duplicates allowed (the last value per position).
            t_idxs, b_idxs = rng.integers(0, T, k), rng.integers(0, B, k)
            _, first = np.unique((t_idxs * B + b_idxs)[::-1], return_index=True)
            keep = np.sort(k - 1 - first)  # Make positions unique: duplicates may keep either.
            t_idxs, b_idxs = t_idxs[keep], b_idxs[keep]
            values = rng.uniform(0, 3, size=len(keep))
            tree.update(t_idxs, b_idxs, values)
            for t, b, v in zip(t_idxs, b_idxs, values):
                ref.update(t, b, v)
        check_tree(tree, ref)


def test_duplicate_positions_in_one_update_keep_one_of_their_values():
    tree = SumTree(4, 1, 0, 0)
    tree.advance(4)
    tree.update([2, 2, 1], [0, 0, 0], [5.0, 7.0, 3.0])
    assert tree.leaf_values()[2, 0] in (5.0, 7.0)
    assert tree.total == pytest.approx(1.0 + 3.0 + tree.leaf_values()[2, 0] + 1.0)


@pytest.mark.parametrize("T,B", [(1, 1), (5, 3), (16, 4), (33, 1), (100, 41)])
def test_sampling_frequencies_match_priorities(T, B):
    np.random.seed(T * 100 + B)
    ob, of = (1, 1) if T > 2 else (0, 0)
    tree = SumTree(T, B, ob, of)
    priorities = np.random.uniform(0.0, 4.0, size=(T, B))
    priorities[0, 0] = 0.0  # Zero priority: never drawn.
    tree.advance(T, priorities)
    weights = tree.leaf_values()
    if weights.sum() == 0:
        with pytest.raises(RuntimeError, match="no position"):
            tree.sample(1)
        return
    n = 100_000
    (t_idxs, b_idxs), drawn = tree.sample(n)
    assert np.array_equal(drawn, weights[t_idxs, b_idxs])
    counts = np.zeros((T, B))
    np.add.at(counts, (t_idxs, b_idxs), 1)
    p = weights / weights.sum()
    assert np.all(counts[p == 0] == 0)  # Excluded and zero-priority positions never come up.
    sigma = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(counts - n * p) <= 5 * sigma + 1)


def test_window_around_the_cursor_is_excluded_and_restored():
    tree = SumTree(6, 2, off_backward=2, off_forward=1)
    tree.advance(4, np.arange(1, 9, dtype=float).reshape(4, 2))
    assert np.array_equal(tree.valid_rows(np.arange(6)), [True, True, False, False, False, False])
    tree.advance(2)  # Full: cursor at 0; rows 4, 5 new, row 0 oldest.
    assert np.array_equal(tree.valid_rows(np.arange(6)), [False, True, True, True, False, False])
    tree.advance(1)  # Row 0 rewritten; rows 2.. restored as the window moves.
    assert np.array_equal(tree.valid_rows(np.arange(6)), [False, False, True, True, True, False])
    assert np.array_equal(tree.leaf_values()[4], [1.0, 1.0])
    assert np.array_equal(tree.leaf_values()[2], [5.0, 6.0])


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="off_backward"):
        SumTree(4, 1, 3, 1)
    with pytest.raises(ValueError, match="T=0"):
        SumTree(0, 1, 0, 0)
    tree = SumTree(4, 2, 1, 1)
    with pytest.raises(RuntimeError, match="no position"):
        tree.sample(3)
    with pytest.raises(ValueError, match="T=5"):
        tree.advance(5)
    with pytest.raises(ValueError, match="do not fit"):
        tree.advance(2, np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        tree.advance(2, -1.0)
    with pytest.raises(IndexError, match="positions"):
        tree.update([4], [0], [1.0])
    with pytest.raises(ValueError, match="equal lengths"):
        tree.update([1, 2], [0], [1.0])
