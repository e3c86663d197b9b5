"""A vectorised sum tree over a ``[T, B]`` ring of priorities, for prioritized replay.

The tree is a flat float64 array in heap order (children of node ``i`` at ``2i``
and ``2i + 1``); its leaves are the ``T * B`` ring positions, numbered
``t * B + b``, padded with zeros up to a power of two.  Only the levels from the
"top" level of at most ``TOP_WIDTH`` nodes down are kept: the top is searched
flat, with one ``cumsum`` and ``searchsorted`` for a whole batch of draws, which
replaces its 10 binary levels by two numpy calls; below it, a batch descends (or
re-sums after an update) one binary level per numpy step, 10 steps at 1M leaves.
Every kept node is recomputed as the exact sum of its two children whenever a
leaf below it changes, so the float64 sums never drift, and duplicate indices in
a batch need no special care.  The tree is binary rather than wider: a wider tree has
fewer levels, but its per-level 2-D numpy steps cost more than the levels they save
(docs/notes/code_figures.md has the comparison).

Positions around the write cursor are kept out of sampling: the ``off_backward``
newest rows (their n-step targets or sequences are not complete yet) and the
``off_forward`` oldest rows (their history has been overwritten).  The tree stores
each position's priority separately and shows ``0`` at a leaf while the position
is excluded, restoring the priority when the cursor moves on.
"""

from __future__ import annotations

import numpy as np

from rlpyt.utils.buffer import np_mp_array

__all__ = ["SumTree"]

_MAX_RESAMPLE_ROUNDS = 100
TOP_WIDTH = 1024  # Nodes in the flat-searched top level (a power of two).


def _zeros(shape, dtype, share_memory: bool) -> np.ndarray:
    return np_mp_array(shape, dtype) if share_memory else np.zeros(shape, dtype=dtype)


class SumTree:
    """Sum tree with batched update and sample over a ``[T, B]`` ring.

    Args:
        T: rows in the ring (time steps, or sequence starts for sequence replay).
        B: columns (environments).
        off_backward: newest rows before the cursor excluded from sampling.
        off_forward: oldest rows at and after the cursor excluded from sampling.
        default_value: priority given to new rows by ``advance`` when none is passed.
            Default ``1.``.
        share_memory: allocate the tree, priorities and cursor in shared memory, so
            that processes holding a copy of this object see one tree.  Default ``False``.

    The cursor counts rows ever advanced (``count``); ``t = count % T`` is the next
    row to write.  Valid rows are the written rows ``u`` (counted without wrap) with
    ``count - T + off_forward <= u < count - off_backward``, unless the caller passes
    the valid ``window = (low, high)`` of unwrapped rows itself (a sequence replay
    whose appends do not end on row boundaries knows it exactly); a caller that does
    so passes it to every ``advance`` and ``update``.
    """

    def __init__(
        self,
        T: int,
        B: int,
        off_backward: int,
        off_forward: int,
        default_value: float = 1.0,
        share_memory: bool = False,
    ):
        for name, value, low in (("T", T, 1), ("B", B, 1), ("off_backward", off_backward, 0),
                                 ("off_forward", off_forward, 0)):
            if int(value) != value or value < low:
                raise ValueError(f"SumTree: {name}={value!r} must be an integer >= {low}")
        if off_backward + off_forward >= T:
            raise ValueError(
                f"SumTree: off_backward + off_forward = {off_backward} + {off_forward} must be "
                f"less than T={T}, or no row could ever be sampled"
            )
        self.T, self.B = int(T), int(B)
        self.size = self.T * self.B
        self.off_backward, self.off_forward = int(off_backward), int(off_forward)
        self.default_value = float(default_value)
        self.n_leaves = 1 << max(0, (self.size - 1).bit_length())
        depth = self.n_leaves.bit_length() - 1  # Leaf level: 2**depth nodes.
        self.top_level = min(depth, TOP_WIDTH.bit_length() - 1)
        self.levels_below_top = depth - self.top_level
        self.top = slice(1 << self.top_level, 2 << self.top_level)
        self.tree = _zeros(2 * self.n_leaves, np.float64, share_memory)
        self.priorities = _zeros((self.T, self.B), np.float64, share_memory)
        self._count = _zeros(1, np.int64, share_memory)

    @property
    def count(self) -> int:
        """Rows advanced so far, without wrap."""
        return int(self._count[0])

    @property
    def t(self) -> int:
        """The ring row the next ``advance`` writes."""
        return self.count % self.T

    @property
    def total(self) -> float:
        """Sum of the priorities of all currently valid positions."""
        return float(self.tree[self.top].sum())

    def nbytes_arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays this tree holds (for memory accounting)."""
        return self.tree, self.priorities, self._count

    def leaf_values(self) -> np.ndarray:
        """The sampling weights ``[T, B]``: priorities, with excluded positions at 0."""
        return self.tree[self.n_leaves:self.n_leaves + self.size].reshape(self.T, self.B)

    def window(self, count: int | None = None) -> tuple[int, int]:
        """``[low, high)`` of the valid unwrapped rows by the offsets, at ``count`` rows."""
        count = self.count if count is None else count
        return max(0, count - self.T + self.off_forward), count - self.off_backward

    def valid_rows(self, rows: np.ndarray, window: tuple[int, int] | None = None) -> np.ndarray:
        """Boolean mask: which ring ``rows`` may be sampled at the current cursor."""
        rows = np.asarray(rows, dtype=np.int64)
        count = self.count
        newest_lap = count - 1 - (count - 1 - rows) % self.T  # Latest write of each row.
        low, high = self.window(count) if window is None else window
        return (newest_lap >= low) & (newest_lap < high)

    def advance(self, T: int, priorities=None, window: tuple[int, int] | None = None,
                previous_window: tuple[int, int] | None = None) -> None:
        """Write ``T`` new rows at the cursor and move the cursor past them.

        Args:
            T: number of new rows (at most the ring's ``T``; 0 only moves the window).
            priorities: ``[T, B]``, ``[B]`` or scalar priorities for the new rows;
                ``None`` uses ``default_value``.
            window, previous_window: the valid rows after and before this call, for
                callers that give the window themselves (see the class docstring).
        """
        if int(T) != T or not 0 <= T <= self.T:
            raise ValueError(f"SumTree.advance: T={T!r} must be an integer in [0, {self.T}]")
        if (window is None) != (previous_window is None):
            raise ValueError("SumTree.advance: give both window and previous_window, or neither")
        count = self.count
        if T:
            values = self.default_value if priorities is None else priorities
            values = _broadcast_priorities(values, (T, self.B), "SumTree.advance")
            self.priorities[np.arange(count, count + T) % self.T] = values
        self._count[0] = count + T
        if window is None:
            window, previous_window = self.window(count + T), self.window(count)
        # Rows whose validity may have changed: the new rows and those between the old
        # and new edges of the window.
        edges = [np.arange(count, count + T)]
        for old, new in zip(previous_window, window):
            edges.append(np.arange(min(old, new), max(old, new)))
        rows = np.unique(np.concatenate(edges) % self.T)
        self._refresh_rows(rows, window)

    def update(self, T_idxs, B_idxs, priorities, window: tuple[int, int] | None = None) -> None:
        """Set the priorities at positions ``(T_idxs, B_idxs)`` (equal-length arrays).

        Positions excluded right now keep the new priority and show it once they
        become valid.  With duplicate positions, one of their priorities is kept.
        ``window``: the valid rows, for callers that give it (see the class docstring).
        """
        T_idxs = np.asarray(T_idxs, dtype=np.int64).reshape(-1)
        B_idxs = np.asarray(B_idxs, dtype=np.int64).reshape(-1)
        values = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if not len(T_idxs) == len(B_idxs) == len(values):
            raise ValueError(
                f"SumTree.update: T_idxs, B_idxs and priorities must have equal lengths, got "
                f"{len(T_idxs)}, {len(B_idxs)} and {len(values)}"
            )
        _check_priority_values(values, "SumTree.update")
        if len(T_idxs) and (T_idxs.min() < 0 or T_idxs.max() >= self.T
                            or B_idxs.min() < 0 or B_idxs.max() >= self.B):
            raise IndexError(
                f"SumTree.update: positions must lie in [0, {self.T}) x [0, {self.B}), got "
                f"T_idxs in [{T_idxs.min()}, {T_idxs.max()}], B_idxs in "
                f"[{B_idxs.min()}, {B_idxs.max()}]"
            )
        self.priorities[T_idxs, B_idxs] = values
        leaves = T_idxs * self.B + B_idxs
        self._set_leaves(leaves, self.priorities[T_idxs, B_idxs] * self.valid_rows(T_idxs, window))

    def sample(self, n: int) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
        """Draw ``n`` positions with replacement, each with probability priority / total.

        Returns ``((T_idxs, B_idxs), priorities)``, the priorities being the sampled
        leaves' values.  Uses numpy's global random state (seeded by ``set_seed``).
        """
        if int(n) != n or n < 1:
            raise ValueError(f"SumTree.sample: n={n!r} must be an integer >= 1")
        top = self.tree[self.top]
        cumulative = np.cumsum(top)
        if not cumulative[-1] > 0:
            raise RuntimeError(
                f"SumTree.sample: no position can be sampled (total priority "
                f"{cumulative[-1]}; {self.count} rows written, "
                f"{self.off_backward + self.off_forward} excluded around the cursor)"
            )
        heap = self._find(np.random.random_sample(int(n)), top, cumulative)
        values = self.tree[heap]
        # Rounding in the descent can land on a zero leaf next to the target: redraw those.
        zero = np.flatnonzero(values <= 0)
        for _ in range(_MAX_RESAMPLE_ROUNDS):
            if len(zero) == 0:
                break
            heap[zero] = self._find(np.random.random_sample(len(zero)), top, cumulative)
            values[zero] = self.tree[heap[zero]]
            zero = zero[values[zero] <= 0]
        else:  # pragma: no cover - only reachable if the tree is corrupted
            raise RuntimeError("SumTree.sample: kept landing on zero-priority leaves")
        T_idxs, B_idxs = np.divmod(heap - self.n_leaves, self.B)
        return (T_idxs, B_idxs), values

    def _find(self, uniform: np.ndarray, top: np.ndarray, cumulative: np.ndarray) -> np.ndarray:
        """Heap indices of the leaves for uniform draws in [0, 1).

        ``top`` holds the top level's sums and ``cumulative`` their running sum.
        """
        mass = uniform * cumulative[-1]
        # The first top node whose running sum exceeds the mass (zero nodes are skipped).
        node = np.minimum(np.searchsorted(cumulative, mass, side="right"), len(top) - 1)
        mass -= cumulative[node] - top[node]
        idx = node + self.top.start
        for _ in range(self.levels_below_top):
            idx <<= 1  # Left child.
            left_mass = self.tree[idx]
            go_right = mass >= left_mass
            np.subtract(mass, left_mass, out=mass, where=go_right)
            idx += go_right
        return idx

    def _refresh_rows(self, rows: np.ndarray, window: tuple[int, int] | None = None) -> None:
        """Recompute the leaves of whole ``rows`` (distinct) from priorities and validity."""
        values = self.priorities[rows] * self.valid_rows(rows, window)[:, None]
        leaves = (rows[:, None] * self.B + np.arange(self.B)).reshape(-1)
        self._set_leaves(leaves, values.reshape(-1))

    def _set_leaves(self, leaves: np.ndarray, values: np.ndarray) -> None:
        """Write leaf values (flat positions) and re-sum every ancestor."""
        idx = leaves + self.n_leaves
        self.tree[idx] = values
        large = len(idx) > 4096
        if large:  # Sum each node once: sorted, repeats are adjacent at every level.
            idx = np.sort(idx)
        for _ in range(self.levels_below_top):
            if large:
                idx = idx[np.concatenate(([True], idx[1:] != idx[:-1]))]
            sums = self.tree[idx] + self.tree[idx ^ 1]  # Node plus its sibling.
            idx >>= 1
            self.tree[idx] = sums


def _check_priority_values(values: np.ndarray, where: str) -> None:
    # NaN fails "min >= 0" and inf fails "max < inf": two reductions check everything.
    if values.size and not (values.min() >= 0 and values.max() < np.inf):
        bad = values[~(np.isfinite(values) & (values >= 0))][:5]
        raise ValueError(f"{where}: priorities must be finite and >= 0, got e.g. {bad}")


def _broadcast_priorities(values, shape: tuple[int, int], where: str) -> np.ndarray:
    """Priorities as a float64 ``shape`` array from ``shape``, ``[B]`` or a scalar."""
    values = np.asarray(values, dtype=np.float64)
    try:
        values = np.broadcast_to(values, shape)
    except ValueError:
        raise ValueError(
            f"{where}: priorities of shape {values.shape} do not fit {shape} "
            f"(give [T, B], [B] or a scalar)"
        ) from None
    _check_priority_values(values, where)
    return values
