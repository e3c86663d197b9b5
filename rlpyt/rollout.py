"""A rollout iterator for users who own their training loop.

Any sampler becomes a stream of ``[T, B]`` sample batches::

    agent = CategoricalPgAgent()
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=32, batch_B=8)
    with rollout(sampler, agent, n_itr=100, seed=0) as batches:
        optimizer = torch.optim.Adam(agent.parameters(), lr=1e-3)
        for batch in batches:
            dist_info, value = agent(*batch.agent_inputs)
            loss = ...                       # any loss on batch.samples
            optimizer.zero_grad(); loss.backward(); optimizer.step()

Each batch's arrays are reused by the next one (no copies): keep what you need.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rlpyt.agents.base import AgentInputs
from rlpyt.utils.seed import make_seed, set_seed

__all__ = ["Rollout", "RolloutBatch", "rollout"]


@dataclass
class RolloutBatch:
    """One sampler batch: ``samples`` (torch ``Samples`` ``[T, B]``) and finished trajectories."""

    itr: int
    samples: Any
    traj_infos: list

    @property
    def agent_inputs(self) -> AgentInputs:
        """``(observation, prev_action, prev_reward)`` of the batch, ready for ``agent(...)``."""
        return AgentInputs(
            self.samples.env.observation,
            self.samples.agent.prev_action,
            self.samples.env.prev_reward,
        )


class Rollout:
    """Iterator of ``RolloutBatch``; initialises the sampler on creation, shuts it down at the end.

    Args:
        sampler: any rlpyt sampler (not yet initialized).
        agent: the agent to act with (not yet initialized).
        n_itr: number of batches to yield (None: forever).
        seed: seed for torch/numpy and every env (None: drawn from the OS).
        affinity: affinity dict for the sampler (``cuda_idx`` moves the agent to that GPU).
        bootstrap_value: also record the value of the observation after each batch.
    """

    def __init__(self, sampler, agent, n_itr=None, seed=None, affinity=None,
                 bootstrap_value=False):
        self.sampler, self.agent, self.n_itr = sampler, agent, n_itr
        self.seed = make_seed() if seed is None else int(seed)
        set_seed(self.seed)
        affinity = dict(affinity or {})
        try:
            self.examples = sampler.initialize(agent=agent, affinity=affinity, seed=self.seed,
                                               bootstrap_value=bootstrap_value)
            agent.to_device(affinity.get("cuda_idx"))
        except BaseException:
            sampler.shutdown()  # release envs and worker processes started so far
            raise
        self.batch_spec = sampler.batch_spec
        self._closed = False

    def __iter__(self) -> Iterator[RolloutBatch]:
        itr = 0
        try:
            while self.n_itr is None or itr < self.n_itr:
                self.agent.sample_mode(itr)
                samples, traj_infos = self.sampler.obtain_samples(itr)
                self.agent.train_mode(itr)
                yield RolloutBatch(itr, samples, traj_infos)
                itr += 1
        finally:
            self.close()

    def close(self):
        if not self._closed:
            self._closed = True
            self.sampler.shutdown()

    def __enter__(self) -> Rollout:
        return self

    def __exit__(self, *exc):
        self.close()


def rollout(sampler, agent, n_itr=None, seed=None, affinity=None,
            bootstrap_value=False) -> Rollout:
    """Stream ``[T, B]`` batches from ``sampler`` acting with ``agent``; see ``Rollout``."""
    return Rollout(sampler, agent, n_itr, seed, affinity, bootstrap_value)
