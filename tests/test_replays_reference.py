"""Plain-Python references for the replay tests: fake env streams with full history.

``Stream`` plays ``B`` fake environments and hands out ``[T, B]`` sample batches the
way a sampler would (episode ends, time-limit truncations, Atari-style frame
stacks that reset to zeros, recurrent states), while remembering every step.
The ``ref_*`` functions compute what a replay buffer should return for a step of
that history with plain loops, independently of the buffers' vectorised code.
The tests at the bottom check the fake env itself.
"""

from __future__ import annotations

import numpy as np

from rlpyt.utils.collections import namedarraytuple

SamplesToBuffer = namedarraytuple("SamplesToBuffer", ["observation", "action", "reward", "done"])
SamplesToBufferTl = namedarraytuple(
    "SamplesToBufferTl", ["observation", "action", "reward", "done", "timeout"])
SamplesToBufferRnn = namedarraytuple(
    "SamplesToBufferRnn", ["observation", "action", "reward", "done", "prev_rnn_state"])
RnnState = namedarraytuple("RnnState", ["h", "c"])

OBS_SHAPE = (3,)
FRAME_SHAPE = (2, 3)
RNN_SHAPE = (1, 4)  # [layers, hidden]


class Stream:
    """``B`` fake envs producing batches; ``history[field]`` is ``[steps, B, ...]``.

    Args:
        B: number of envs.
        seed: numpy seed of the stream.
        done_p: chance of an episode end at each step.
        timeout_p: chance that an episode end is a time-limit truncation.
        n_frames: if given, observations are frame stacks ``[n_frames, 2, 3]`` uint8
            that reset to zeros (plus the new frame) after every episode end, and the
            stack before the first step is partly filled as if mid-episode.
        rnn: add ``prev_rnn_state`` (``RnnState`` of ``[1, 4]``) to each step.
        timeout: add the ``timeout`` field.
    """

    def __init__(self, B, seed=0, done_p=0.2, timeout_p=0.5, n_frames=None, rnn=False,
                 timeout=False):
        self.B = B
        self.rng = np.random.default_rng(seed)
        self.done_p, self.timeout_p = done_p, timeout_p
        self.n_frames, self.rnn, self.timeout = n_frames, rnn, timeout
        self.history = {}
        if n_frames is not None:
            self.stacks = self._new_frames((B, n_frames))
            blank = self.rng.integers(0, n_frames, size=B)  # Some envs reset recently.
            for b in range(B):
                self.stacks[b, :blank[b]] = 0

    def _new_frames(self, lead):
        return self.rng.integers(1, 256, size=lead + FRAME_SHAPE).astype(np.uint8)

    @property
    def count(self):
        return len(self.history.get("reward", ()))

    def example(self):
        """One step with the fields, shapes and dtypes of the batches (the stream's
        random state is left as it was, so equal seeds give equal batches)."""
        state = self.rng.bit_generator.state
        example = self.batch(1, record=False)[0, 0]
        self.rng.bit_generator.state = state
        return example

    def batch(self, T, record=True):
        """The next ``[T, B]`` batch (numpy)."""
        steps = [self._step(record) for _ in range(T)]
        fields = {k: np.stack([s[k] for s in steps]) for k in steps[0]}
        if record:
            for k, v in fields.items():
                self.history[k] = v if k not in self.history else np.concatenate(
                    [self.history[k], v])
        return self._to_samples(fields)

    def _step(self, record):
        B, rng = self.B, self.rng
        step = {}
        if self.n_frames is None:
            step["observation"] = rng.normal(size=(B,) + OBS_SHAPE).astype(np.float32)
        else:
            step["observation"] = self.stacks.copy()
        step["action"] = rng.integers(0, 5, size=B).astype(np.int64)
        step["reward"] = rng.normal(size=B).astype(np.float32)
        done = rng.random(B) < self.done_p
        step["done"] = done
        if self.timeout:
            step["timeout"] = done & (rng.random(B) < self.timeout_p)
        if self.rnn:
            step["h"] = rng.normal(size=(B,) + RNN_SHAPE).astype(np.float32)
            step["c"] = rng.normal(size=(B,) + RNN_SHAPE).astype(np.float32)
        if self.n_frames is not None and record:
            new = self._new_frames((B,))
            self.stacks[done] = 0  # Reset: the new episode's stack starts blank.
            self.stacks = np.concatenate([self.stacks[:, 1:], new[:, None]], axis=1)
        return step

    def _to_samples(self, f):
        if self.rnn:
            return SamplesToBufferRnn(f["observation"], f["action"], f["reward"], f["done"],
                                      RnnState(f["h"], f["c"]))
        if self.timeout:
            return SamplesToBufferTl(f["observation"], f["action"], f["reward"], f["done"],
                                     f["timeout"])
        return SamplesToBuffer(f["observation"], f["action"], f["reward"], f["done"])


def ref_n_step(history, p, b, n, discount):
    """``(return_, done_n, timeout_n)`` of step ``p`` in env ``b``, by a plain loop."""
    ret, done_n, timeout_n = 0.0, False, False
    for k in range(n):
        ret += discount ** k * float(history["reward"][p + k, b])
        if history["done"][p + k, b]:
            done_n = True
            timeout_n = bool(history["timeout"][p + k, b]) if "timeout" in history else False
            break
    return ret, done_n, timeout_n


def ref_previous(history, field, p, b):
    """The prev_action / prev_reward input of step ``p``: step ``p - 1``, zero before 0."""
    return history[field][p - 1, b] if p >= 1 else np.zeros_like(history[field][0, b])


def retained_steps(count, T, reads_before, reads_after):
    """Steps ``p`` whose sample reads steps ``p - reads_before .. p + reads_after``, all
    still stored in a ring of ``T`` after ``count`` steps: written (``q < count``) and
    not yet overwritten (step ``q + T`` not written; the slots before step 0 hold the
    data of the first step, overwritten like any other)."""
    return [
        p for p in range(count)
        if p + reads_after < count and all(q + T >= count for q in range(p - reads_before, p + 1))
    ]


# ----- checks of the fake env itself -----


def test_stream_frame_stacks_reset_to_zeros_after_done():
    stream = Stream(B=3, seed=1, done_p=0.3, n_frames=4)
    stream.batch(40)
    obs, done = stream.history["observation"], stream.history["done"]
    for b in range(3):
        for p in range(1, 40):
            if done[p - 1, b]:
                assert np.all(obs[p, b, :3] == 0) and np.all(obs[p, b, 3] > 0)
            else:  # The stack shifts by one frame.
                assert np.array_equal(obs[p, b, :3], obs[p - 1, b, 1:])


def test_retained_steps_by_hand():
    # Ring of 5 after 7 steps holds steps 2..6; reading 1 back and 2 ahead: 3 and 4.
    assert retained_steps(7, 5, 1, 2) == [3, 4]
    # Before the ring fills, step 0 may read "step -1" (the blank slot).
    assert retained_steps(4, 5, 1, 1) == [0, 1, 2]
