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
    """

    def __init__(self, example, *args, **kwargs):
        observation = getattr(example, "observation", None)
        if observation is None or np.ndim(observation) < 2:
            raise ValueError(
                f"{type(self).__name__}: example.observation must be one frame stack "
                f"[n_frames, H, W, ...], got shape {np.shape(observation)}")
        self.n_frames = int(np.shape(observation)[0])
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
