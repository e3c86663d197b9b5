"""rlpyt.rollout: a sampler as a stream of [T, B] batches for a user-owned loop."""

import pytest
import torch

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.envs.gym import make
from rlpyt.rollout import RolloutBatch, rollout
from rlpyt.samplers.samples import AgentSamplesBsv
from rlpyt.samplers.serial.sampler import SerialSampler

T, B = 16, 3


def make_sampler():
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=T,
                            batch_B=B, max_decorrelation_steps=5)
    closed = []
    original = sampler.shutdown
    sampler.shutdown = lambda: (closed.append(True), original())
    return sampler, closed


def test_rollout_yields_n_itr_batches_and_shuts_down():
    sampler, closed = make_sampler()
    agent = CategoricalPgAgent()
    batches = []
    for batch in rollout(sampler, agent, n_itr=3, seed=1):
        assert isinstance(batch, RolloutBatch) and batch.itr == len(batches)
        samples = batch.samples
        assert samples.env.observation.shape == (T, B, 4)
        assert samples.agent.action.shape == (T, B) and samples.env.reward.shape == (T, B)
        assert isinstance(samples.env.reward, torch.Tensor)
        assert all(info.Length > 0 for info in batch.traj_infos)
        inputs = batch.agent_inputs
        assert inputs.observation is samples.env.observation
        assert inputs.prev_action is samples.agent.prev_action
        batches.append(samples.env.observation.clone())
        assert not closed
    assert len(batches) == 3 and closed == [True]
    assert not torch.equal(batches[0], batches[1])  # fresh data each batch


def test_plain_torch_loop_trains_on_the_batches():
    sampler, closed = make_sampler()
    agent = CategoricalPgAgent()
    with rollout(sampler, agent, n_itr=4, seed=0) as batches:
        optimizer = torch.optim.Adam(agent.parameters(), lr=1e-2)
        start = [p.detach().clone() for p in agent.parameters()]
        losses = []
        for batch in batches:
            dist_info, value = agent(*batch.agent_inputs)
            assert value.shape == (T, B) and dist_info.prob.shape == (T, B, 2)
            log_prob = torch.log(dist_info.prob.gather(-1, batch.samples.agent.action.long()
                                                       .unsqueeze(-1)).squeeze(-1))
            reward = batch.samples.env.reward
            loss = -(log_prob * reward).mean() + 0.5 * ((value - reward) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    assert len(losses) == 4 and closed == [True]
    assert any(not torch.equal(a, p) for a, p in zip(start, agent.parameters()))


def test_breaking_out_early_inside_with_shuts_down_once():
    sampler, closed = make_sampler()
    with rollout(sampler, CategoricalPgAgent(), n_itr=None, seed=0) as batches:
        for batch in batches:
            if batch.itr == 1:
                break
    assert closed == [True]


def test_bootstrap_value_and_same_seed_same_batches():
    def first_batch(seed):
        sampler, _ = make_sampler()
        torch.manual_seed(123)  # rollout reseeds torch before the agent is built
        r = rollout(sampler, CategoricalPgAgent(), n_itr=1, seed=seed, bootstrap_value=True)
        (batch,) = list(r)
        assert isinstance(batch.samples.agent, AgentSamplesBsv)
        return batch.samples.env.observation.clone(), batch.samples.agent.action.clone()

    obs_a, act_a = first_batch(5)
    obs_b, act_b = first_batch(5)
    assert torch.equal(obs_a, obs_b) and torch.equal(act_a, act_b)
    obs_c, _ = first_batch(6)
    assert not torch.equal(obs_a, obs_c)


def test_rollout_initialization_errors_surface_and_shut_down():
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="Pendulum-v1"), batch_T=2, batch_B=1)
    closed = []
    original = sampler.shutdown
    sampler.shutdown = lambda: (closed.append(True), original())
    with pytest.raises(TypeError, match="GaussianPgAgent"):
        rollout(sampler, CategoricalPgAgent(), n_itr=1)
    assert closed == [True] and sampler.envs == []
