"""Schemas of the ``[T, B]`` sample batches that samplers write and algorithms read."""

from __future__ import annotations

from collections import namedtuple

from rlpyt.envs.traj_info import TrajInfo
from rlpyt.utils.collections import namedarraytuple

__all__ = [
    "AgentSamples",
    "AgentSamplesBsv",
    "BatchSpec",
    "EnvSamples",
    "Samples",
    "StepsInfo",
    "TrajInfo",
]

Samples = namedarraytuple("Samples", ["agent", "env"])
AgentSamples = namedarraytuple("AgentSamples", ["action", "prev_action", "agent_info"])
# With bootstrap values, for algorithms that set ``bootstrap_value = True``:
#   bootstrap_value [B]: V(observation after the batch's last step);
#   timeout_value [T, B]: V(final observation) where an episode was truncated
#   (``env_info.timeout``), zero elsewhere, so returns bootstrap through time limits.
AgentSamplesBsv = namedarraytuple(
    "AgentSamplesBsv",
    ["action", "prev_action", "agent_info", "bootstrap_value", "timeout_value"],
)
EnvSamples = namedarraytuple(
    "EnvSamples", ["observation", "reward", "prev_reward", "done", "env_info"]
)
StepsInfo = namedtuple("StepsInfo", ["steps", "trajectories"])


class BatchSpec(namedtuple("BatchSpec", ["T", "B"])):
    """Sampler batch shape: ``T`` time steps by ``B`` parallel environments."""

    __slots__ = ()

    @property
    def size(self) -> int:
        return self.T * self.B
