"""Checks a runner makes before any env is built or stepped.

Each failure raises ``ValueError`` (``TypeError`` for a wrong agent class) naming the
argument, its value and what would be valid, so that a mistake costs seconds instead
of a crash after sampling started.
"""

from __future__ import annotations

import difflib
import importlib
import inspect

__all__ = ["check_agent_family", "check_before_start", "check_cuda_idx", "check_model_kwargs",
           "check_replay_sizes"]

# (algorithm class, agent base class it needs, what to use instead); subclasses first.
_FAMILIES = (
    ("rlpyt.algos.pg.base:PolicyGradientAlgo", "rlpyt.agents.pg.base:BasePgAgent",
     "a policy-gradient agent (CategoricalPgAgent, GaussianPgAgent, AtariFfAgent, ...)"),
    ("rlpyt.algos.dqn.r2d1:R2D1", "rlpyt.agents.dqn.r2d1_agent:R2d1AgentBase",
     "a recurrent Q agent (R2d1Agent, AtariR2d1Agent, ...)"),
    ("rlpyt.algos.dqn.cat_dqn:CategoricalDQN", "rlpyt.agents.dqn.catdqn_agent:CatDqnAgent",
     "a distributional Q agent (CatDqnAgent, AtariCatDqnAgent)"),
    ("rlpyt.algos.dqn.dqn:DQN", "rlpyt.agents.dqn.dqn_agent:DqnAgent",
     "a Q agent (DqnAgent, AtariDqnAgent)"),
    ("rlpyt.algos.qpg.sac:SAC", "rlpyt.agents.qpg.sac_agent:SacAgent", "SacAgent"),
    ("rlpyt.algos.qpg.td3:TD3", "rlpyt.agents.qpg.td3_agent:Td3Agent", "Td3Agent"),
    ("rlpyt.algos.qpg.ddpg:DDPG", "rlpyt.agents.qpg.ddpg_agent:DdpgAgent",
     "DdpgAgent (or Td3Agent)"),
)


def check_before_start(algo, agent, sampler, n_steps: int, affinity: dict) -> None:
    """Every check of this module, for a runner about to start."""
    check_agent_family(algo, agent)
    check_model_kwargs(agent)
    check_cuda_idx(affinity.get("cuda_idx"))
    batch_spec = getattr(sampler, "batch_spec", None)
    if batch_spec is not None:
        check_replay_sizes(algo, batch_spec)
    min_learn = getattr(algo, "min_steps_learn", None)
    if isinstance(min_learn, (int, float)) and min_learn >= n_steps:
        raise ValueError(
            f"{type(algo).__name__}: min_steps_learn={min_learn} is not below the run's "
            f"n_steps={n_steps}, so the run would end before its first update; lower "
            f"min_steps_learn or raise n_steps"
        )


def import_path_or_none(path: str):
    """``"module:Name"`` -> the class, or None if its module is not importable."""
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        return None


def check_agent_family(algo, agent) -> None:
    for algo_path, agent_path, advice in _FAMILIES:
        algo_cls = import_path_or_none(algo_path)
        if algo_cls is None or not isinstance(algo, algo_cls):
            continue
        agent_cls = import_path_or_none(agent_path)
        if agent_cls is not None and not isinstance(agent, agent_cls):
            raise TypeError(
                f"{type(algo).__name__} cannot train a {type(agent).__name__}: it needs "
                f"{advice}, an instance of {agent_cls.__name__}"
            )
        return


def check_model_kwargs(agent) -> None:
    """Keys of ``agent.model_kwargs`` must be keywords of ``agent.ModelCls``."""
    ModelCls = getattr(agent, "ModelCls", None)
    model_kwargs = getattr(agent, "model_kwargs", None) or {}
    if ModelCls is None or not model_kwargs:
        return
    try:
        params = inspect.signature(ModelCls).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return
    valid = sorted(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                        p.KEYWORD_ONLY))
    for key in model_kwargs:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"{type(agent).__name__}: model_kwargs key {key!r} (value "
                f"{model_kwargs[key]!r}) is not a keyword of {ModelCls.__name__}{hint}; valid "
                f"keys: {valid}"
            )


def check_cuda_idx(cuda_idx) -> None:
    if cuda_idx is None:
        return
    import torch

    if not torch.cuda.is_available():
        raise ValueError(
            f"cuda_idx={cuda_idx!r}, but this torch has no usable CUDA device "
            f"(torch {torch.__version__}, cuda available: False); leave cuda_idx unset "
            f"(None) to train on the CPU"
        )
    count = torch.cuda.device_count()
    if isinstance(cuda_idx, bool) or not isinstance(cuda_idx, int) or not 0 <= cuda_idx < count:
        raise ValueError(f"cuda_idx={cuda_idx!r} must be an integer in [0, {count - 1}] "
                         f"({count} CUDA device(s) visible)")


def check_replay_sizes(algo, batch_spec) -> None:
    """A replay must hold one sampler batch and what one training batch reads."""
    replay_size = getattr(algo, "replay_size", None)
    if not isinstance(replay_size, int) or getattr(algo, "ReplayBufferCls", None) is not None:
        return  # no replay, or a custom buffer with its own rules
    name = type(algo).__name__
    batch_size = getattr(algo, "batch_size", None)
    if isinstance(batch_size, int) and replay_size < batch_size:
        raise ValueError(
            f"{name}: replay_size={replay_size} is smaller than batch_size={batch_size}, "
            f"the samples of one training batch; use replay_size >= {batch_size} (usually "
            f"far more)"
        )
    n_step = int(getattr(algo, "n_step_return", 1) or 1)
    # Steps per env one sample reads: a sequence (R2D1) or one step plus its n-step return.
    seq_T = getattr(algo, "warmup_T", None)
    need_T = (seq_T + algo.batch_T if seq_T is not None else 1) + n_step
    need_T = max(need_T, batch_spec.T)
    T = replay_size // batch_spec.B
    if T < need_T:
        raise ValueError(
            f"{name}: replay_size={replay_size} gives {T} steps for each of the sampler's "
            f"batch_B={batch_spec.B} envs, but one sampler batch (batch_T={batch_spec.T}) "
            f"and one training sample (n_step_return={n_step}"
            + (f", warmup_T={seq_T}, batch_T={algo.batch_T}" if seq_T is not None else "")
            + f") need {need_T}; use replay_size >= {need_T * batch_spec.B}"
        )
