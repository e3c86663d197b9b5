"""The API contract's path of the sample schemas, which ``rlpyt.samplers.samples`` defines."""

from rlpyt.samplers.samples import (
    AgentSamples,
    AgentSamplesBsv,
    BatchSpec,
    EnvSamples,
    Samples,
    StepsInfo,
    TrajInfo,
)

__all__ = [
    "AgentSamples",
    "AgentSamplesBsv",
    "BatchSpec",
    "EnvSamples",
    "Samples",
    "StepsInfo",
    "TrajInfo",
]
