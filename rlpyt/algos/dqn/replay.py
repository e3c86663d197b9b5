"""Which replay buffer a DQN-family algorithm builds, and what it stores.

The rule (``replay_buffer_class``):

* **frames** when the observation is ``uint8`` with at least 3 dims (a stack of
  image frames ``[n_frames, H, W]``, as ``AtariEnv`` gives): each frame is stored once
  (``...FrameBuffer``), a 4x memory saving.  One example cannot tell a frame stack
  from a ``uint8`` channel image, so the frame buffer checks its first appended steps
  (each stack is the previous one shifted by a frame, reset stacks are zero-padded)
  and raises, naming ``ReplayBufferCls``, when they are not;
* **prioritized** when ``prioritized_replay=True``;
* **time-limit aware** (``Tl...``) when ``bootstrap_timelimit=True`` and the env
  reports ``env_info.timeout`` (Gymnasium envs through ``rlpyt.envs.gym`` and
  ``AtariEnv`` do);
* the ``Async...`` twin for asynchronous runners.

``ReplayBufferCls`` given to the algorithm overrides the rule (it gets the same
keyword arguments).  All the classes live in ``rlpyt.replays.non_sequence``; the
time-limit frame buffers are also re-exported here, so that code importing them from
this module keeps working.
"""

from __future__ import annotations

import numpy as np

from rlpyt.replays.non_sequence.frame import (
    AsyncPrioritizedReplayFrameBuffer,
    AsyncTlPrioritizedReplayFrameBuffer,
    AsyncTlUniformReplayFrameBuffer,
    AsyncUniformReplayFrameBuffer,
    NStepTimeLimitFrameBuffer,
    PrioritizedReplayFrameBuffer,
    TlPrioritizedReplayFrameBuffer,
    TlUniformReplayFrameBuffer,
    UniformReplayFrameBuffer,
)
from rlpyt.replays.non_sequence.prioritized import (
    AsyncPrioritizedReplayBuffer,
    PrioritizedReplayBuffer,
)
from rlpyt.replays.non_sequence.time_limit import (
    AsyncTlPrioritizedReplayBuffer,
    AsyncTlUniformReplayBuffer,
    TlPrioritizedReplayBuffer,
    TlUniformReplayBuffer,
)
from rlpyt.replays.non_sequence.uniform import AsyncUniformReplayBuffer, UniformReplayBuffer
from rlpyt.utils.collections import namedarraytuple

__all__ = [
    "AsyncTlPrioritizedReplayFrameBuffer",
    "AsyncTlUniformReplayFrameBuffer",
    "NStepTimeLimitFrameBuffer",
    "SamplesToBuffer",
    "SamplesToBufferTl",
    "TlPrioritizedReplayFrameBuffer",
    "TlUniformReplayFrameBuffer",
    "is_frame_stack",
    "replay_buffer_class",
]

SamplesToBuffer = namedarraytuple("SamplesToBuffer", ["observation", "action", "reward", "done"])
SamplesToBufferTl = namedarraytuple("SamplesToBufferTl", SamplesToBuffer._fields + ("timeout",))

# (frames, prioritized, time limit) -> (synchronous class, asynchronous class)
_CLASSES = {
    (False, False, False): (UniformReplayBuffer, AsyncUniformReplayBuffer),
    (False, True, False): (PrioritizedReplayBuffer, AsyncPrioritizedReplayBuffer),
    (False, False, True): (TlUniformReplayBuffer, AsyncTlUniformReplayBuffer),
    (False, True, True): (TlPrioritizedReplayBuffer, AsyncTlPrioritizedReplayBuffer),
    (True, False, False): (UniformReplayFrameBuffer, AsyncUniformReplayFrameBuffer),
    (True, True, False): (PrioritizedReplayFrameBuffer, AsyncPrioritizedReplayFrameBuffer),
    (True, False, True): (TlUniformReplayFrameBuffer, AsyncTlUniformReplayFrameBuffer),
    (True, True, True): (TlPrioritizedReplayFrameBuffer, AsyncTlPrioritizedReplayFrameBuffer),
}


def is_frame_stack(observation) -> bool:
    """True for ``uint8`` observations with >= 3 dims (stacked image frames)."""
    observation = np.asarray(observation)
    return observation.dtype == np.uint8 and observation.ndim >= 3


def replay_buffer_class(
    observation, prioritized: bool, time_limit: bool, async_: bool = False
) -> type:
    """The replay class for one example ``observation`` by the rule in this module's doc."""
    sync_cls, async_cls = _CLASSES[(is_frame_stack(observation), bool(prioritized),
                                    bool(time_limit))]
    return async_cls if async_ else sync_cls
