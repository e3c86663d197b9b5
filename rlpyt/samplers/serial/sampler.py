"""Serial sampler: all envs stepped in the main process (debugging and small envs)."""

from __future__ import annotations

import functools

from rlpyt.samplers.acting_beside_envs import CpuResetCollector, collector_for_env
from rlpyt.samplers.base import BaseSampler
from rlpyt.samplers.env_group import make_envs, make_example_env
from rlpyt.samplers.samples_buffer import build_samples_buffer
from rlpyt.samplers.serial.collectors import SerialEvalCollector
from rlpyt.utils.seed import env_seeds, make_seed

__all__ = ["SerialSampler"]


class SerialSampler(BaseSampler):
    """Steps ``batch_B`` envs one after another in the calling process.

    Keywords as ``BaseSampler``; defaults ``CollectorCls=CpuResetCollector`` and
    ``eval_CollectorCls=SerialEvalCollector``.  Env ``i`` (global rank) is seeded with
    ``env_seeds(seed, global_B)[i]``, exactly as in the parallel samplers, so the
    same seed gives the same batches on any sampler.

    A vectorised ``EnvCls`` (``rlpyt.envs.vec``: ``EnvPoolAtariEnv``, ``GymVecEnv``, ...)
    is built once with ``num_envs=batch_B`` and stepped with one call per time step
    (``CpuResetCollector`` becomes ``CpuVecResetCollector``); evaluation steps
    ``num_envs=1`` copies one by one.
    """

    def __init__(self, *args, CollectorCls=CpuResetCollector,
                 eval_CollectorCls=SerialEvalCollector, **kwargs):
        super().__init__(*args, CollectorCls=CollectorCls,
                         eval_CollectorCls=eval_CollectorCls, **kwargs)
        self.CollectorCls = collector_for_env(self.EnvCls, self.CollectorCls, "SerialSampler")
        self.envs, self.eval_envs = [], []

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
        B = self.batch_spec.B
        global_B = B * world_size
        env_ranks = list(range(rank * B, (rank + 1) * B))
        seed = make_seed() if seed is None else int(seed)
        all_seeds = env_seeds(seed, global_B + 1 + self.eval_n_envs * world_size)
        seeds = [all_seeds[r] for r in env_ranks]
        self.envs = make_envs(self.EnvCls, self.env_kwargs, seeds)
        example_env = make_example_env(self.EnvCls, self.env_kwargs)
        agent.initialize(example_env.spaces, share_memory=False, global_B=global_B,
                         env_ranks=env_ranks)
        example_env.seed(all_seeds[global_B])
        samples_pyt, samples_np, examples = build_samples_buffer(
            agent, example_env, self.batch_spec, bootstrap_value,
            agent_shared=False, env_shared=False,
        )
        example_env.close()
        TrajInfoCls = functools.partial(self.TrajInfoCls, **(traj_info_kwargs or {}))
        self.collector = self.CollectorCls(
            rank=0, envs=self.envs, samples_np=samples_np, batch_T=self.batch_spec.T,
            TrajInfoCls=TrajInfoCls, agent=agent, global_B=global_B, env_ranks=env_ranks,
            env_seeds=seeds,
        )
        if self.eval_n_envs > 0:
            eval_offset = global_B + 1 + rank * self.eval_n_envs
            self.eval_envs = make_envs(
                self.EnvCls, self.eval_env_kwargs,
                all_seeds[eval_offset:eval_offset + self.eval_n_envs], vectorize=False)
            self.eval_collector = self.eval_CollectorCls(
                envs=self.eval_envs, agent=agent, TrajInfoCls=TrajInfoCls,
                max_steps=self.eval_max_steps, max_trajectories=self.eval_max_trajectories,
            )
        self.agent_inputs, self.traj_infos = self.collector.start_envs(
            self.max_decorrelation_steps
        )
        self.collector.start_agent()
        self.agent = agent
        self.samples_pyt, self.samples_np = samples_pyt, samples_np
        return examples

    def obtain_samples(self, itr):
        self.agent_inputs, self.traj_infos, completed = self.collector.collect_batch(
            self.agent_inputs, self.traj_infos, itr
        )
        self.collector.reset_if_needed(self.agent_inputs)
        return self.samples_pyt, completed

    def evaluate_agent(self, itr):
        if self.eval_n_envs == 0:
            raise RuntimeError("evaluate_agent called on a sampler built with eval_n_envs=0")
        return self.eval_collector.collect_evaluation(itr)

    def shutdown(self):
        for env in self.envs + self.eval_envs:
            env.close()
        self.envs, self.eval_envs = [], []
