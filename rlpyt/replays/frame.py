"""Frame storage: keep each image frame once and rebuild frame-stacked observations.

Samplers deliver Atari-style observations as a stack of the last ``n_frames``
frames, ``[n_frames, H, W]`` per step, so consecutive observations share
``n_frames - 1`` frames.  Storing only the newest frame of each step cuts the
observation memory by ``n_frames``.

Memory: a ring of ``size`` transitions holds ``size + (n_frames - 1) * B`` frames
plus the small per-step fields (action, reward, done, and for ``n_step_return > 1``
return and done_n).  For 1M Pong transitions (104x80 uint8 frames, int64 actions,
float32 rewards, ``B = 8``) that is 1M x 8,320 B of frames plus 13 B per step of
other fields (18 B with n-step fields): 8.33 GB, 1.002 x the frames alone (8.34 GB,
1.002 x, for ``n_step_return > 1``).  A buffer of full stacks would need 33.3 GB.
"""

from __future__ import annotations

import numpy as np

from rlpyt.utils.buffer import buffer_from_example, numpify_buffer

__all__ = ["FrameBufferMixin"]


class FrameBufferMixin:
    """Mixin (before an n-step buffer in the bases) storing observations frame by frame.

    The example's ``observation`` is one full stack ``[n_frames, H, W]`` (how samplers
    deliver it); ``n_frames`` is read from it.  ``samples_frames`` has
    ``T + n_frames - 1`` rows: frame row ``t + n_frames - 1`` holds the newest frame
    of ring step ``t``, and the first ``n_frames - 1`` rows repeat the last ones, so
    that the stack of step ``t`` is the contiguous rows ``t .. t + n_frames - 1``
    even across the ring's wrap.

    Rebuilt stacks hold zeros, never frames of the previous episode, before an
    episode's first step (after a ``done``), as the env's own stack does after a
    reset.  The frames preceding the very first step come from its stack.

    The first ``verify_steps`` appended steps are checked against both assumptions
    (each stack is the previous one shifted by a frame; a reset stack is zero-padded),
    so an observation that only looks like a frame stack (a ``uint8`` channel image,
    or a stack padded by repeating the first frame) fails loudly instead of being
    stored wrong.
    """

    verify_steps = 2_000

    def __init__(self, example, *args, **kwargs):
        observation = getattr(example, "observation", None)
        if observation is None or np.ndim(observation) < 2:
            raise ValueError(
                f"{type(self).__name__}: example.observation must be one frame stack "
                f"[n_frames, H, W, ...], got shape {np.shape(observation)}")
        self.n_frames = int(np.shape(observation)[0])
        self._verified_steps = 0
        self._previous_stack: tuple = ()  # The last appended step, while verifying.
        super().__init__(example, *args, **kwargs)
        self.samples_frames = buffer_from_example(
            np.asarray(observation)[0], (self.T + self.n_frames - 1, self.B),
            share_memory=self.async_,
        )

    def _excluded_fields(self) -> tuple[str, ...]:
        return super()._excluded_fields() + ("observation",)

    @property
    def off_forward(self) -> int:
        """A stack reads ``n_frames - 1`` steps back (and the done flags between)."""
        return max(super().off_forward, self.n_frames - 1)

    def append_samples(self, samples):
        samples = numpify_buffer(samples)
        observation = np.asarray(samples.observation)
        if observation.shape[2:] != (self.n_frames,) + self.samples_frames.shape[2:]:
            raise ValueError(
                f"{type(self).__name__}.append_samples: observation shape {observation.shape} "
                f"is not [T, B] + {(self.n_frames,) + self.samples_frames.shape[2:]} "
                f"(a stack of n_frames={self.n_frames} frames per step)")
        if self._verified_steps < self.verify_steps:
            self._verify_stacks(observation, np.asarray(samples.done, dtype=bool),
                                getattr(samples, "timeout", None))
        T_idxs, B_idxs = super().append_samples(samples)
        fm1 = self.n_frames - 1
        if self.count == len(T_idxs) and fm1 > 0:  # First append: frames before step 0.
            self.samples_frames[:fm1] = observation[0, :, :fm1].swapaxes(0, 1)
        rows = T_idxs + fm1
        newest = observation[:, :, -1]
        self.samples_frames[rows] = newest
        repeated = rows >= self.T  # Also written to the top rows, for wrapping stacks.
        if fm1 > 0 and repeated.any():
            self.samples_frames[rows[repeated] - self.T] = newest[repeated]
        return T_idxs, B_idxs

    def _verify_stacks(self, observation: np.ndarray, done: np.ndarray, skip) -> None:
        """Raise if consecutive steps of one env are not a frame stack shifted by one
        frame, or if an episode's first stack is not zero-padded (both checked only
        where neither step is a masked filler step, flagged in ``skip``)."""
        fm1 = self.n_frames - 1
        if self._previous_stack:  # Join this batch to the last one.
            observation = np.concatenate([self._previous_stack[0][None], observation])
            done = np.concatenate([self._previous_stack[1][None], done])
            if skip is not None:
                skip = np.concatenate([self._previous_stack[2][None], np.asarray(skip, bool)])
        skip = np.zeros_like(done) if skip is None else np.asarray(skip, dtype=bool)
        if fm1 > 0 and len(observation) > 1:
            self._raise_if_not_stacks(observation, done, skip)
        self._previous_stack = (observation[-1].copy(), done[-1].copy(), skip[-1].copy())
        self._verified_steps += len(observation) - 1

    def _raise_if_not_stacks(self, observation: np.ndarray, done: np.ndarray,
                             skip: np.ndarray) -> None:
        fm1 = self.n_frames - 1
        checked = ~(skip[:-1] | skip[1:])
        older, newer = observation[:-1], observation[1:]
        shifted = (newer[:, :, :fm1] == older[:, :, 1:]).reshape(*checked.shape, -1).all(-1)
        padded = (newer[:, :, :fm1] == 0).reshape(*checked.shape, -1).all(-1)
        bad = checked & np.where(done[:-1], ~padded, ~shifted)
        if bad.any():
            t, b = (int(i) for i in np.argwhere(bad)[0])
            problem = ("an episode's first observation is not zero-padded (its older "
                       "frames are not all 0)" if done[:-1][t, b] else
                       "consecutive observations are not one frame stack shifted by a frame")
            raise ValueError(
                f"{type(self).__name__}: the observations ({self.n_frames} x "
                f"{tuple(observation.shape[3:])} uint8) are stored as frame stacks, but "
                f"{problem} (env {b}, step {t + 1} of the checked batch).  Frame storage "
                f"would rebuild them wrong.  For a uint8 image that is not a frame stack, "
                f"give the algorithm a replay that stores whole observations, e.g. "
                f"ReplayBufferCls=UniformReplayBuffer (rlpyt.replays.non_sequence.uniform); "
                f"for a stack padded with repeated frames, pad it with zeros instead.")

    def _observation_at(self, flat: np.ndarray) -> np.ndarray:
        T_idxs, B_idxs = np.divmod(flat, self.B)
        return self.extract_observation(T_idxs, B_idxs)

    def extract_observation(self, T_idxs: np.ndarray, B_idxs: np.ndarray) -> np.ndarray:
        """Frame stacks ``[..., n_frames, H, W]`` at ring positions (broadcastable arrays)."""
        T_idxs, B_idxs = np.broadcast_arrays(T_idxs, B_idxs)
        frame_rows = T_idxs[..., None] + np.arange(self.n_frames)
        observation = self.samples_frames[frame_rows, B_idxs[..., None]]
        for back in range(1, self.n_frames):
            # A done `back` steps earlier: frames from that step and before are blank.
            episode_start = self.samples.done[(T_idxs - back) % self.T, B_idxs].astype(bool)
            observation[episode_start, :self.n_frames - back] = 0
        return observation
