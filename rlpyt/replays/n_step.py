"""Ring storage of ``[T, B]`` samples with n-step returns computed as data arrives.

Every replay buffer builds on ``BaseNStepReturnBuffer``.  It keeps one ring of
``T = size // B`` time steps for each of ``B`` environments, written at a shared
cursor, and fills in ``return_`` and ``done_n`` for each position as soon as the
``n_step_return`` rewards it needs have arrived.

Sampling works in *rows*: a row is a position a sample may start at (every step
for transition replay, every ``rnn_state_interval``-th step for sequence replay).
A row is valid while all the steps its sample reads are stored: not among the
newest steps, whose n-step target (or sequence) is not complete, and not among
the oldest, whose history (previous action, earlier frames) has been overwritten.
"""

from __future__ import annotations

import math

import numpy as np

from rlpyt.replays.base import BaseReplayBuffer
from rlpyt.utils.buffer import (
    buffer_from_example,
    get_leading_dims,
    np_mp_array,
    numpify_buffer,
    torchify_buffer,
)
from rlpyt.utils.collections import is_namedtuple, namedarraytuple
from rlpyt.utils.returns import discount_return_n_step

__all__ = ["BaseNStepReturnBuffer"]


class BaseNStepReturnBuffer(BaseReplayBuffer):
    """Stores ``[T, B]`` samples in a ring and computes n-step returns incrementally.

    Args:
        example: one time step of what ``append_samples`` receives, a namedtuple with
            at least ``observation``, ``action``, ``reward`` and ``done`` (e.g.
            ``SamplesToBuffer``); it sets the fields, shapes and dtypes stored.
        size: total transitions held, ``T * B`` (rounded down to a multiple of ``B``).
        B: number of environments writing side by side (the batch dim of samples).
        discount: discount of the n-step return.  Default ``1``.
        n_step_return: rewards summed into ``return_``; the target observation is
            ``n_step_return`` steps later.  Default ``1``.

    ``return_[t] = sum_{k < n} discount**k * reward[t + k]``, stopping after the first
    done; ``done_n[t]`` says whether a done occurred in that window.  With
    ``n_step_return=1`` they are the stored ``reward`` and ``done`` themselves.
    """

    def __init__(self, example, size: int, B: int, discount: float = 1.0, n_step_return: int = 1):
        name = type(self).__name__
        _check_int(name, "B", B, 1)
        _check_int(name, "size", size, B)
        _check_int(name, "n_step_return", n_step_return, 1)
        if not 0 <= discount <= 1:
            raise ValueError(f"{name}: discount={discount!r} must lie in [0, 1]")
        _check_fields(name, example, self._required_fields())
        self.T = int(size) // int(B)
        self.B = int(B)
        self.size = self.T * self.B
        self.discount = float(discount)
        self.n_step_return = int(n_step_return)
        self._check_layout()
        stored_cls = namedarraytuple("BufferSamples", self._stored_fields(example))
        stored = _select_fields(example, stored_cls)
        self.samples = buffer_from_example(stored, (self.T, self.B), share_memory=self.async_)
        if self.n_step_return > 1:
            self.samples_return_ = self._ring_like(example.reward)
            self.samples_done_n = self._ring_like(example.done)
        else:  # A one-step return is the reward itself: share the memory.
            self.samples_return_ = self.samples.reward
            self.samples_done_n = self.samples.done
        self._count = np_mp_array(1, np.int64) if self.async_ else np.zeros(1, np.int64)
        # Fixed once the subclasses' attributes are set: read on every sample.
        self._rows_layout = (self.row_interval, self.off_forward, self.off_backward)

    # ----- layout: which fields are stored, and which rows may be sampled -----

    def _required_fields(self) -> tuple[str, ...]:
        return ("observation", "action", "reward", "done")

    def _excluded_fields(self) -> tuple[str, ...]:
        """Example fields kept outside ``self.samples`` (stored specially by subclasses)."""
        return ()

    def _stored_fields(self, example) -> tuple[str, ...]:
        excluded = self._excluded_fields()
        return tuple(f for f in example._fields if f not in excluded)

    def _ring_like(self, example_field):
        return buffer_from_example(example_field, (self.T, self.B), share_memory=self.async_)

    @property
    def row_interval(self) -> int:
        """Steps between possible sample starts."""
        return 1

    @property
    def n_rows(self) -> int:
        return self.T // self.row_interval

    @property
    def off_backward(self) -> int:
        """Steps a sample reads after its start: the newest this many cannot start one."""
        return self.n_step_return

    @property
    def off_forward(self) -> int:
        """Steps a sample reads before its start (the previous action)."""
        return 1

    @property
    def off_backward_rows(self) -> int:
        return math.ceil((self.off_backward + 1) / self.row_interval) - 1

    @property
    def off_forward_rows(self) -> int:
        return math.ceil(self.off_forward / self.row_interval)

    def _check_layout(self) -> None:
        if self.n_rows <= self.off_backward_rows + self.off_forward_rows:
            raise ValueError(
                f"{type(self).__name__}: size={self.size} over B={self.B} gives only "
                f"{self.T} steps per env; a sample reads {self.off_forward} step(s) before "
                f"and {self.off_backward} after its start, so nothing could be sampled. "
                f"Use a larger size."
            )

    @property
    def count(self) -> int:
        """Steps appended per environment so far (not wrapped)."""
        return int(self._count[0])

    @property
    def t(self) -> int:
        """Ring index the next step is written to."""
        return self.count % self.T

    @property
    def nbytes(self) -> int:
        """Bytes of all arrays this buffer holds (shared views counted once)."""
        return _nbytes(self.__dict__.values())

    def valid_row_range(self) -> tuple[int, int]:
        """``[low, high)`` of the rows that may be sampled now, counted without wrap.

        Ring row of an unwrapped row ``u`` is ``u % n_rows``; it starts at step
        ``(u % n_rows) * row_interval``.  Row ``u`` is valid while every step it reads,
        ``u * row_interval - off_forward`` through ``u * row_interval + off_backward``,
        is stored; appended batches need not end on a row boundary.
        """
        interval, off_forward, off_backward = self._rows_layout
        count = int(self._count[0])
        low = max(0, -((self.T - count - off_forward) // interval))  # ceil division
        return low, (count - off_backward - 1) // interval + 1

    def rows_begun(self, count: int | None = None) -> int:
        """Rows whose first step has been appended (after ``count`` steps; default now)."""
        count = self.count if count is None else count
        return -(-count // self.row_interval)

    def row_start_steps(self, count: int, T_new: int) -> np.ndarray:
        """Indexes into a batch of ``T_new`` steps appended after ``count`` steps of the
        steps that start rows (multiples of ``row_interval`` counted from the first)."""
        interval = self.row_interval
        return np.arange((-count) % interval, T_new, interval)

    # ----- writing -----

    def append_samples(self, samples):
        """Write a ``[T, B]`` batch at the cursor; returns ``(T_idxs, B_idxs)`` written.

        ``T_idxs`` are the ring indices of the new steps (``[T]``) and ``B_idxs`` is
        ``arange(B)``.  Accepts numpy or torch (CPU) fields.
        """
        samples = numpify_buffer(samples)
        stored = _select_fields(samples, type(self.samples))
        T_new = self._check_batch(stored)
        count = self.count
        t = count % self.T
        T_idxs = np.arange(count, count + T_new) % self.T
        if t + T_new <= self.T:
            self.samples[t:t + T_new] = stored
        else:
            self.samples[T_idxs] = stored
        self._count[0] = count + T_new
        self._compute_returns(T_new)
        return T_idxs, np.arange(self.B)

    def _check_batch(self, stored) -> int:
        T_new, B = get_leading_dims(stored, 2)
        if B != self.B:
            raise ValueError(f"{type(self).__name__}.append_samples: batch has B={B}, "
                             f"the buffer was built for B={self.B}")
        if not 1 <= T_new <= self.T:
            raise ValueError(f"{type(self).__name__}.append_samples: batch has T={T_new}; "
                             f"it must lie in [1, {self.T}] (the ring's length)")
        return T_new

    def _compute_returns(self, T_new: int) -> None:
        """Fill ``return_`` / ``done_n`` of the positions whose window just completed."""
        n = self.n_step_return
        if n == 1:
            return
        count = self.count
        # Position p needs rewards p .. p + n - 1; those ending in the new steps complete
        # now.  Positions before the buffer's start or already overwritten are skipped.
        first = max(count - T_new - (n - 1), count - self.T, 0)
        last = count - n
        if last < first:
            return
        positions = np.arange(first, last + 1) % self.T
        window = np.arange(first, last + n) % self.T
        self._write_n_step(positions, window)

    def _write_n_step(self, positions: np.ndarray, window: np.ndarray) -> None:
        return_, done_n = discount_return_n_step(
            self.samples.reward[window], self.samples.done[window],
            self.n_step_return, self.discount,
        )
        self.samples_return_[positions] = return_
        self.samples_done_n[positions] = done_n

    # ----- reading -----

    def extract_observation(self, T_idxs: np.ndarray, B_idxs: np.ndarray):
        """Observations at ring positions ``(T_idxs, B_idxs)`` (broadcastable arrays)."""
        return self.samples.observation[T_idxs, B_idxs]

    def _observation_at(self, flat: np.ndarray):
        """``extract_observation`` at the positions of flat indexes ``t * B + b`` (a
        cheaper gather; frame buffers rebuild their stacks instead)."""
        return self._take(self.samples.observation, flat)

    def _take(self, field: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """``field[t, b]`` for flat indexes ``t * B + b``: a 1-D gather, a few times
        cheaper than 2-D fancy indexing for the small batches of replay."""
        return field.reshape(self.size, *field.shape[2:]).take(flat, axis=0)

    def _previous(self, field, T_idxs: np.ndarray, B_idxs: np.ndarray):
        """``field`` one step before each position: the stored prev_action / prev_reward.

        These are the previous step's stored ``action`` / ``reward``.  At an episode's
        first step they belong to the previous episode's last step: the collectors gave
        the agent the null action and zero reward there (``_after_done`` blanks them),
        but the replay does not store those inputs, so models that read them see
        different values in training than in sampling (as in classic rlpyt; R2D1 blanks
        them itself at episode starts).  Before the first step ever written they are zero.
        """
        return field[(T_idxs - 1) % self.T, B_idxs]

    def extract_batch(self, T_idxs, B_idxs):
        """The training batch for samples starting at ring positions ``(T_idxs, B_idxs)``,
        as torch tensors sharing memory with freshly gathered numpy arrays."""
        T_idxs = np.asarray(T_idxs, dtype=np.int64)
        B_idxs = np.asarray(B_idxs, dtype=np.int64)
        return torchify_buffer(self._extract_batch(T_idxs, B_idxs))

    def _extract_batch(self, T_idxs: np.ndarray, B_idxs: np.ndarray):
        raise NotImplementedError


def _nbytes(objects, seen: set | None = None) -> int:
    """Total bytes of the arrays in ``objects`` (recursing into namedtuples and objects
    with an ``nbytes_arrays`` method), each memory block counted once."""
    seen = set() if seen is None else seen
    total = 0
    for obj in objects:
        if isinstance(obj, np.ndarray):
            key = (obj.__array_interface__["data"][0], obj.nbytes)
            if key not in seen:
                seen.add(key)
                total += obj.nbytes
        elif is_namedtuple(obj):
            total += _nbytes(obj, seen)
        elif hasattr(obj, "nbytes_arrays"):
            total += _nbytes(obj.nbytes_arrays(), seen)
    return total


def _check_int(owner: str, name: str, value, low: int) -> None:
    if isinstance(value, bool) or int(value) != value or value < low:
        raise ValueError(f"{owner}: {name}={value!r} must be an integer >= {low}")


def _check_fields(owner: str, example, required: tuple[str, ...]) -> None:
    if not is_namedtuple(example):
        raise TypeError(
            f"{owner}: example must be a namedtuple (e.g. SamplesToBuffer) with fields "
            f"{required}, got {type(example).__name__}"
        )
    missing = [f for f in required if f not in example._fields]
    if missing:
        raise ValueError(
            f"{owner}: example {type(example).__name__} lacks field(s) {missing}; "
            f"it has {example._fields} and needs {required}"
        )


def _select_fields(samples, cls):
    """The fields of namedarraytuple class ``cls`` taken from ``samples`` (sharing arrays)."""
    try:
        return cls(*(getattr(samples, f) for f in cls._fields))
    except AttributeError:
        missing = [f for f in cls._fields if f not in getattr(samples, "_fields", ())]
        raise ValueError(
            f"samples of type {type(samples).__name__} (fields "
            f"{getattr(samples, '_fields', None)}) lack field(s) {missing} that the replay "
            f"buffer stores"
        ) from None
