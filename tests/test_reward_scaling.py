"""RewardScaler (``normalize_rewards``): rewards divided by the running std of each env's
discounted return, checked against a plain per-step loop."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.algos.pg.a2c import A2C
from rlpyt.algos.pg.ppo import PPO
from rlpyt.algos.pg.reward_scaling import REWARD_CLIP, RewardScaler
from rlpyt.samplers.samples import BatchSpec
from tests.test_pg_algos import LinearAgent, bandit_samples, make_samples


def reference_scaling(batches, discount):
    """Plain loops: every env's running return, step by step; all returns seen up to the
    end of a batch give the std that batch's rewards are divided by (population std)."""
    B = batches[0][0].shape[1]
    running = [0.0] * B
    seen, out = [], []
    for reward, done, valid in batches:
        T = reward.shape[0]
        for t in range(T):
            for b in range(B):
                running[b] = discount * running[b] + float(reward[t, b])
                if valid is None or valid[t, b]:
                    seen.append(running[b])
                if done[t, b]:
                    running[b] = 0.0
        std = max(float(np.std(seen)), 1e-4) if seen else 1.0
        out.append(np.clip(reward.astype(np.float64) / std, -REWARD_CLIP, REWARD_CLIP))
    return out


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 6), B=st.integers(1, 3), n_batches=st.integers(1, 4),
       discount=st.sampled_from([0.0, 0.5, 0.99, 1.0]), seed=st.integers(0, 2**16),
       with_valid=st.booleans())
def test_scaled_rewards_match_the_per_step_loop(T, B, n_batches, discount, seed, with_valid):
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n_batches):
        reward = (rng.normal(size=(T, B)) * rng.choice([0.1, 3.0, 50.0])).astype(np.float32)
        done = rng.random((T, B)) < 0.3
        valid = (np.cumsum(done, axis=0) - done) == 0 if with_valid else None
        batches.append((reward, done, valid))
    scaler = RewardScaler(discount)
    got = [scaler(r, d, v) for r, d, v in batches]
    for ours, ref in zip(got, reference_scaling(batches, discount)):
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_torch_rewards_come_back_as_torch_and_large_rewards_are_clipped():
    scaler = RewardScaler(0.0)  # returns are the rewards
    gen = torch.Generator().manual_seed(0)
    scaler(torch.randn(1000, 2, generator=gen), torch.zeros(1000, 2, dtype=torch.bool))
    reward = torch.zeros(4, 2)
    reward[3, 0] = 1e3  # beyond 10 stds of all returns, its own included (std about 16)
    out = scaler(reward, torch.zeros(4, 2, dtype=torch.bool))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert out[3, 0].item() == REWARD_CLIP
    assert torch.equal(out[:3], torch.zeros(3, 2))


def test_the_running_return_carries_across_batches_and_stops_at_done():
    scaler = RewardScaler(0.5)
    scaler(np.ones((2, 2), np.float32), np.array([[False, False], [False, True]]))
    # Env 0 ran on: 1, 1.5; env 1 ended its episode at the last step.
    np.testing.assert_allclose(scaler.running_return.numpy(), [1.5, 0.0])
    returns = scaler.discounted_returns(torch.ones(1, 2), torch.zeros(1, 2))
    np.testing.assert_allclose(returns.numpy(), [[1.75, 1.0]])


@pytest.mark.parametrize("Algo", [A2C, PPO])
def test_process_returns_learns_from_scaled_rewards(Algo):
    """Advantages and returns are those of the scaled rewards (GAE of the scaled batch),
    and the logged rewards in the samples are not changed."""
    T, B = 5, 3
    agent = LinearAgent()
    gen = torch.Generator().manual_seed(5)
    observation = torch.randn(T, B, 4, generator=gen)
    reward = 20 + 5 * torch.randn(T, B, generator=gen)
    done = torch.zeros(T, B, dtype=torch.bool)
    done[2, 1] = True
    samples = make_samples(agent, observation, reward=reward, done=done)
    algo = Algo(discount=0.9, gae_lambda=0.8, normalize_rewards=True)
    algo.initialize(agent, n_itr=3, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    plain = Algo(discount=0.9, gae_lambda=0.8)
    plain.initialize(agent, n_itr=3, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    scaled_reward = torch.from_numpy(reference_scaling(
        [(reward.numpy(), done.numpy(), None)], 0.9)[0]).float()
    scaled_samples = make_samples(agent, observation, reward=scaled_reward, done=done)
    # make_samples draws the agent's values from the same model: both batches agree on them.
    scaled_samples.agent.agent_info.value[:] = samples.agent.agent_info.value

    return_, advantage, _ = algo.process_returns(samples)
    ref_return, ref_advantage, _ = plain.process_returns(scaled_samples)

    torch.testing.assert_close(advantage, ref_advantage, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(return_, ref_return, rtol=1e-5, atol=1e-5)
    assert samples.env.reward.mean().item() > 10  # the sampler's buffer is not scaled


def test_reward_scaling_state_is_part_of_the_algorithm_state():
    agent = LinearAgent()
    samples = bandit_samples(agent, 4, 2, torch.Generator().manual_seed(13))
    algo = A2C(normalize_rewards=True)
    algo.initialize(agent, n_itr=5, batch_spec=BatchSpec(4, 2), mid_batch_reset=True)
    algo.optimize_agent(0, samples)
    state = copy.deepcopy(algo.state_dict())
    assert state["reward_scaler"]["return_rms"]["count"].item() == 8
    other = A2C(normalize_rewards=True)
    other.initialize(LinearAgent(), n_itr=5, batch_spec=BatchSpec(4, 2))
    other.load_state_dict(state)
    assert torch.equal(other.reward_scaler.running_return, algo.reward_scaler.running_return)
    assert other.reward_scaler.return_rms.var.item() == algo.reward_scaler.return_rms.var.item()
    with pytest.raises(KeyError, match="reward_scaler"):
        other.load_state_dict({k: v for k, v in state.items() if k != "reward_scaler"})
    plain = A2C()
    plain.initialize(LinearAgent(), n_itr=5, batch_spec=BatchSpec(4, 2))
    assert plain.reward_scaler is None and "reward_scaler" not in plain.state_dict()
