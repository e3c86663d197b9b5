"""Parameter hand-off to CpuSampler workers: every step of a batch (and of an evaluation)
acts with one complete set of weights, the newest published before the batch.

The probe agent reports, at every step, the smallest and the largest entry of the
parameters it acted with; the test sets every parameter to one value per iteration
(in place, as an optimizer does), so a step that saw a mix of old and new weights, or
stale weights, shows up as ``min != max`` or a wrong value.
"""

from __future__ import annotations

import copy
import threading
import time

import pytest
import torch

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.envs.gym import make
from rlpyt.samplers.base import WorkerError
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler

ENV_KWARGS = dict(id="CartPole-v1")


class ParamProbeAgent(CategoricalPgAgent):
    """Reports min and max of its model parameters at each step (in ``agent_info``)."""

    def step(self, observation, prev_action, prev_reward):
        out = super().step(observation, prev_action, prev_reward)
        params = torch.cat([p.detach().flatten() for p in self.model.parameters()])
        out.agent_info.value[:] = params.min()
        out.agent_info.dist_info.prob[:, 0] = params.max()
        return out


def fill_parameters(model, value: float) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(value)


@pytest.mark.parametrize("separate_training_model", [False, True],
                         ids=["shared-cpu-model", "separate-training-model"])
def test_every_step_acts_with_one_complete_set_of_weights(separate_training_model):
    sampler = CpuSampler(EnvCls=make, env_kwargs=ENV_KWARGS, batch_T=32, batch_B=4,
                         max_decorrelation_steps=0)
    agent = ParamProbeAgent()
    sampler.initialize(agent, affinity=dict(n_workers=2), seed=3)
    if separate_training_model:  # As on a GPU: sync_shared_memory copies into the workers'.
        agent.model = copy.deepcopy(agent.shared_model)
    try:
        for itr in range(6):
            value = 0.01 * (itr + 1)
            fill_parameters(agent.model, value)
            samples, _ = sampler.obtain_samples(itr)
            lo, hi = samples.agent.agent_info.value, samples.agent.agent_info.dist_info.prob[..., 0]
            assert torch.equal(lo, hi), f"itr {itr}: a step acted with a mix of weights"
            assert torch.allclose(lo, torch.full_like(lo, value)), f"itr {itr}: stale weights"
    finally:
        sampler.shutdown()


class SlowEnv:
    """CartPole whose steps take 20 ms (a batch long enough to publish weights during it)."""

    def __new__(cls, **kwargs):
        env = make(**kwargs)
        step = env.step

        def slow_step(action):
            time.sleep(0.02)
            return step(action)

        env.step = slow_step
        return env


def test_publishing_parameters_during_a_batch_is_refused():
    """The version check: a (broken) master that republishes weights while workers
    sample gets an error instead of a batch collected with two sets of weights."""
    sampler = CpuSampler(EnvCls=SlowEnv, env_kwargs=ENV_KWARGS, batch_T=40, batch_B=2,
                         max_decorrelation_steps=0)
    sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=3)

    def publish_mid_batch():
        time.sleep(0.3)
        sampler._publish_parameters()

    thread = threading.Thread(target=publish_mid_batch)
    try:
        thread.start()
        with pytest.raises(WorkerError, match="parameters were republished"):
            sampler.obtain_samples(0)
    finally:
        thread.join()
        sampler.shutdown()
