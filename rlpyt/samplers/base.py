"""Sampler base class: shared argument checking and the public sampler interface."""

from __future__ import annotations

from rlpyt.envs.traj_info import TrajInfo
from rlpyt.samplers.samples import BatchSpec
from rlpyt.utils.quick_args import KeywordCheckedInit

__all__ = ["BaseSampler", "WorkerError"]


class WorkerError(RuntimeError):
    """A sampler's worker process or Ray actor raised, or died; the message names it, its
    envs and its traceback."""


def _positive_int(name: str, value, allow_zero: bool = False) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and (
        value >= 0 if allow_zero else value > 0
    )
    if not ok:
        valid = "a non-negative integer" if allow_zero else "a positive integer"
        raise ValueError(f"{name}={value!r} is invalid: expected {valid}")
    return value


class BaseSampler(KeywordCheckedInit):
    """Collects ``[T, B]`` batches of agent-environment interaction.

    Args:
        EnvCls: callable returning an env (e.g. ``rlpyt.envs.gym.make``).
        env_kwargs: keyword arguments for ``EnvCls``.
        batch_T: time steps per batch.
        batch_B: parallel environments per batch.
        CollectorCls: how envs are stepped and reset (reset vs wait-reset semantics).
        max_decorrelation_steps: each env first takes a random number of random
            actions in ``[0, max_decorrelation_steps]`` so envs start out of phase. Default 100.
        TrajInfoCls: per-trajectory statistics class. Default ``TrajInfo``.
        eval_n_envs: number of evaluation envs (0: no evaluation). Default 0.
        eval_CollectorCls: evaluation collector class (sampler-specific default).
        eval_env_kwargs: keyword arguments for evaluation envs (default: ``env_kwargs``).
        eval_max_steps: total env steps per evaluation across eval envs (window for
            starting trajectories; see the eval collector). Default None.
        eval_max_trajectories: at most this many trajectories are started per evaluation.
            Default None.
    """

    alternating = False

    def __init__(
        self,
        EnvCls,
        env_kwargs,
        batch_T,
        batch_B,
        CollectorCls,
        max_decorrelation_steps=100,
        TrajInfoCls=TrajInfo,
        eval_n_envs=0,
        eval_CollectorCls=None,
        eval_env_kwargs=None,
        eval_max_steps=None,
        eval_max_trajectories=None,
    ):
        if not callable(EnvCls):
            raise TypeError(f"EnvCls={EnvCls!r} must be callable (e.g. rlpyt.envs.gym.make)")
        if env_kwargs is not None and not isinstance(env_kwargs, dict):
            raise TypeError(f"env_kwargs must be a dict, got {type(env_kwargs).__name__}")
        _positive_int("batch_T", batch_T)
        _positive_int("batch_B", batch_B)
        _positive_int("max_decorrelation_steps", int(max_decorrelation_steps), allow_zero=True)
        _positive_int("eval_n_envs", eval_n_envs, allow_zero=True)
        if eval_n_envs > 0 and eval_max_steps is None and eval_max_trajectories is None:
            raise ValueError(
                f"eval_n_envs={eval_n_envs} needs eval_max_steps or eval_max_trajectories "
                "to bound each evaluation"
            )
        if eval_max_steps is not None:
            eval_max_steps = _positive_int("eval_max_steps", int(eval_max_steps))
        if eval_max_trajectories is not None:
            _positive_int("eval_max_trajectories", int(eval_max_trajectories))
            eval_max_trajectories = int(eval_max_trajectories)
        self.EnvCls = EnvCls
        self.env_kwargs = dict(env_kwargs or {})
        self.batch_spec = BatchSpec(batch_T, batch_B)
        self.CollectorCls = CollectorCls
        self.max_decorrelation_steps = int(max_decorrelation_steps)
        self.TrajInfoCls = TrajInfoCls
        self.eval_n_envs = eval_n_envs
        self.eval_CollectorCls = eval_CollectorCls
        self.eval_env_kwargs = dict(self.env_kwargs if eval_env_kwargs is None else eval_env_kwargs)
        self.eval_max_steps = eval_max_steps
        self.eval_max_trajectories = eval_max_trajectories
        self.mid_batch_reset = CollectorCls.mid_batch_reset

    def initialize(
        self,
        agent,
        affinity=None,
        seed=None,
        bootstrap_value=False,
        traj_info_kwargs=None,
        rank=0,
        world_size=1,
    ):
        """Build envs, buffers and workers; returns the example step (``examples`` dict)."""
        raise NotImplementedError

    def obtain_samples(self, itr):
        """Collect one batch; returns ``(samples, completed_traj_infos)``."""
        raise NotImplementedError

    def evaluate_agent(self, itr):
        """Run evaluation episodes; returns their completed traj infos."""
        raise NotImplementedError

    def shutdown(self):
        """Release envs, processes and shared memory."""

    @property
    def batch_size(self) -> int:
        return self.batch_spec.size
