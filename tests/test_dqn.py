"""DQN and Categorical DQN: losses and targets vs plain loops, agents, schedules, replay choice."""

from __future__ import annotations

import copy
import math
import warnings
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.agents.dqn.atari.atari_catdqn_agent import AtariCatDqnAgent
from rlpyt.agents.dqn.atari.atari_dqn_agent import AtariDqnAgent
from rlpyt.agents.dqn.catdqn_agent import CatDqnAgent
from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.algos.dqn.cat_dqn import CategoricalDQN
from rlpyt.algos.dqn.dqn import DQN, updates_per_optimize
from rlpyt.algos.dqn.replay import (
    SamplesToBufferTl,
    TlPrioritizedReplayFrameBuffer,
    TlUniformReplayFrameBuffer,
    replay_buffer_class,
)
from rlpyt.algos.dqn.targets import categorical_projection, huber_loss
from rlpyt.envs.base import EnvSpaces
from rlpyt.models.dqn.atari_catdqn_model import AtariCatDqnModel
from rlpyt.models.dqn.atari_dqn_model import AtariDqnModel
from rlpyt.models.dqn.dueling import DistributionalDuelingHeadModel, DuelingHeadModel
from rlpyt.replays.non_sequence.frame import PrioritizedReplayFrameBuffer
from rlpyt.replays.non_sequence.prioritized import AsyncPrioritizedReplayBuffer
from rlpyt.replays.non_sequence.time_limit import TlPrioritizedReplayBuffer, TlUniformReplayBuffer
from rlpyt.replays.non_sequence.uniform import UniformReplayBuffer
from rlpyt.samplers.samples import BatchSpec
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.collections import namedarraytuple

OBS_DIM, N_ACTIONS = 3, 4
EnvInfo = namedtuple("EnvInfo", ["timeout"])
AgentInputs = namedarraytuple("AgentInputs", ["observation", "prev_action", "prev_reward"])
ReplayBatch = namedarraytuple(
    "ReplayBatch",
    ["agent_inputs", "action", "return_", "done", "done_n", "target_inputs", "timeout",
     "timeout_n", "is_weights"],
)


@pytest.fixture(autouse=True, scope="module")
def single_torch_thread():
    """Tiny tensors: intra-op threads only add overhead on a busy machine."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def env_spaces(obs_shape=(OBS_DIM,), n_actions=N_ACTIONS, dtype="float32"):
    if dtype == "uint8":
        observation = IntBox(low=0, high=256, shape=obs_shape, dtype="uint8")
    else:
        observation = FloatBox(low=-1, high=1, shape=obs_shape)
    return EnvSpaces(observation=observation, action=IntBox(low=0, high=n_actions))


def examples(obs=None, timeout=True):
    obs = np.zeros(OBS_DIM, np.float32) if obs is None else obs
    return dict(observation=obs, action=np.int64(0), reward=np.float32(0), done=np.bool_(False),
                env_info=EnvInfo(timeout=np.bool_(False)) if timeout else (), agent_info=None)


def make_agent(cls=DqnAgent, seed=0, **kwargs):
    torch.manual_seed(seed)
    agent = cls(**kwargs)
    agent.initialize(env_spaces())
    with torch.no_grad():  # A target that differs from the model, as mid-training.
        for p in agent.target_model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return agent


def initialize(algo, agent, batch_spec=BatchSpec(1, 2), **kwargs):
    algo.initialize(agent, n_itr=100, batch_spec=batch_spec, mid_batch_reset=True,
                    examples=kwargs.pop("examples", examples()), **kwargs)
    return algo


def random_batch(generator, B, max_n_step=1):
    def inputs():
        return AgentInputs(torch.randn(B, OBS_DIM, generator=generator),
                           torch.zeros(B, dtype=torch.long), torch.zeros(B))

    done_n = torch.rand(B, generator=generator) < 0.3
    return ReplayBatch(
        agent_inputs=inputs(),
        action=torch.randint(0, N_ACTIONS, (B,), generator=generator),
        return_=3 * torch.randn(B, generator=generator),
        done=done_n,
        done_n=done_n,
        target_inputs=inputs(),
        timeout=torch.zeros(B, dtype=torch.bool),
        timeout_n=done_n & (torch.rand(B, generator=generator) < 0.5),
        is_weights=torch.rand(B, generator=generator) + 0.1,
    )


# ---- DQN loss ------------------------------------------------------------------------------


def reference_dqn_loss(agent, batch, discount, n_step, delta_clip, double, prioritized, tl):
    """Per-sample loop over the DQN loss; returns (loss, priorities)."""
    total, count, priorities = 0.0, 0.0, []
    with torch.no_grad():
        for b in range(len(batch.action)):
            obs, next_obs = batch.agent_inputs.observation[b], batch.target_inputs.observation[b]
            q = agent.model(obs, None, None)[batch.action[b]].item()
            target_q = agent.target_model(next_obs, None, None)
            chooser = agent.model(next_obs, None, None) if double else target_q
            next_value = target_q[int(chooser.argmax())].item()
            not_done = 0.0 if batch.done_n[b] else 1.0
            y = batch.return_[b].item() + discount ** n_step * not_done * next_value
            delta = y - q
            if delta_clip is None or abs(delta) <= delta_clip:
                loss = 0.5 * delta ** 2
            else:
                loss = delta_clip * (abs(delta) - 0.5 * delta_clip)
            weight = batch.is_weights[b].item() if prioritized else 1.0
            valid = 0.0 if tl and batch.timeout_n[b] else 1.0
            total += loss * weight * valid
            count += valid
            clip = delta_clip if prioritized else None
            priorities.append(abs(delta) if clip is None else min(abs(delta), clip))
    return total / max(count, 1.0), priorities


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2 ** 16),
    B=st.integers(1, 12),
    n_step=st.integers(1, 3),
    delta_clip=st.sampled_from([None, 0.5, 1.0]),
    double=st.booleans(),
    prioritized=st.booleans(),
    tl=st.booleans(),
)
def test_dqn_loss_matches_plain_loop(seed, B, n_step, delta_clip, double, prioritized, tl):
    agent = make_agent(seed=seed % 7)
    algo = initialize(DQN(discount=0.9, n_step_return=n_step, delta_clip=delta_clip,
                          double_dqn=double, prioritized_replay=prioritized,
                          bootstrap_timelimit=tl, replay_size=100, batch_size=1,
                          replay_ratio=1), agent)
    batch = random_batch(torch.Generator().manual_seed(seed), B)
    loss, priorities = algo.loss(batch)
    ref_loss, ref_priorities = reference_dqn_loss(
        agent, batch, 0.9, n_step, delta_clip, double, prioritized, tl)
    assert loss.item() == pytest.approx(ref_loss, rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(priorities.numpy(), ref_priorities, rtol=1e-5, atol=1e-6)


def test_dqn_loss_trains_model_only():
    agent = make_agent()
    algo = initialize(DQN(replay_size=100, batch_size=1, replay_ratio=1), agent)
    loss, _ = algo.loss(random_batch(torch.Generator().manual_seed(0), 8))
    loss.backward()
    assert all(p.grad is not None for p in agent.model.parameters())
    assert all(p.grad is None for p in agent.target_model.parameters())


@given(delta=st.floats(-50, 50), clip=st.sampled_from([None, 0.1, 1.0, 10.0]))
def test_huber_loss_pieces(delta, clip):
    value = huber_loss(torch.tensor(delta, dtype=torch.float64), clip).item()
    if clip is None or abs(delta) <= clip:
        assert value == pytest.approx(0.5 * delta ** 2)
    else:
        assert value == pytest.approx(clip * (abs(delta) - 0.5 * clip))


# ---- C51 ---------------------------------------------------------------------------------------


def reference_projection(probs, return_, discount, z):
    """Classic floor/ceil loop over atoms (Bellemare et al. 2017, Algorithm 1)."""
    B, n = probs.shape
    v_min, v_max = float(z[0]), float(z[-1])
    dz = (v_max - v_min) / (n - 1)
    out = np.zeros((B, n))
    for b in range(B):
        for j in range(n):
            tz = min(max(return_[b] + discount[b] * z[j], v_min), v_max)
            pos = min((tz - v_min) / dz, n - 1)  # Rounding can put v_max just past the end.
            low, up = math.floor(pos), math.ceil(pos)
            if low == up:
                out[b, low] += probs[b, j]
            else:
                out[b, low] += probs[b, j] * (up - pos)
                out[b, up] += probs[b, j] * (pos - low)
    return out


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2 ** 16),
    B=st.integers(1, 6),
    n_atoms=st.integers(2, 21),
    v_min=st.floats(-20, 5),
    width=st.floats(0.5, 30),
    on_grid=st.booleans(),
)
def test_categorical_projection_matches_plain_loop(seed, B, n_atoms, v_min, width, on_grid):
    rng = np.random.default_rng(seed)
    z = np.linspace(v_min, v_min + width, n_atoms)
    probs = rng.dirichlet(np.ones(n_atoms), size=B)
    dz = width / (n_atoms - 1)
    if on_grid:  # Shifts landing exactly on atoms (and done samples) are the edge cases.
        return_ = rng.integers(-3, 4, size=B) * dz
        discount = rng.choice([0.0, 1.0], size=B)
    else:
        return_ = rng.uniform(-1.5 * width, 1.5 * width, size=B)
        discount = rng.uniform(0, 1, size=B)
    projected = categorical_projection(
        *(torch.as_tensor(x, dtype=torch.float64) for x in (probs, return_, discount, z)))
    expected = reference_projection(probs, return_, discount, z)
    np.testing.assert_allclose(projected.numpy(), expected, atol=1e-9)
    np.testing.assert_allclose(projected.sum(-1).numpy(), 1.0, atol=1e-9)


def test_categorical_projection_keeps_mean_inside_support():
    z = torch.linspace(-10, 10, 51, dtype=torch.float64)
    probs = torch.softmax(torch.randn(5, 51, dtype=torch.float64), -1)
    return_, discount = torch.full((5,), 0.37, dtype=torch.float64), torch.full((5,), 0.5,
                                                                               dtype=torch.float64)
    projected = categorical_projection(probs, return_, discount, z)
    expected_mean = return_ + discount * (probs * z).sum(-1)  # All shifted atoms within [-10, 10].
    torch.testing.assert_close((projected * z).sum(-1), expected_mean)


def reference_cat_loss(agent, batch, discount, double, prioritized, tl, V_min, V_max):
    n_atoms = agent.n_atoms
    z = np.linspace(V_min, V_max, n_atoms)
    total, count, kls = 0.0, 0.0, []
    with torch.no_grad():
        for b in range(len(batch.action)):
            obs, next_obs = batch.agent_inputs.observation[b], batch.target_inputs.observation[b]
            p = agent.model(obs, None, None)[batch.action[b]].double().numpy()
            target_p = agent.target_model(next_obs, None, None).double().numpy()
            chooser = agent.model(next_obs, None, None).double().numpy() if double else target_p
            next_action = int(np.argmax(chooser @ z))
            shift = 0.0 if batch.done_n[b] else discount
            target = reference_projection(target_p[next_action][None],
                                          [batch.return_[b].item()], [shift], z)[0]
            log_p = np.log(np.maximum(p, 1e-6))
            loss = -(target * log_p).sum()
            weight = batch.is_weights[b].item() if prioritized else 1.0
            valid = 0.0 if tl and batch.timeout_n[b] else 1.0
            total += loss * weight * valid
            count += valid
            kls.append(max((target * (np.log(np.maximum(target, 1e-6)) - log_p)).sum(), 1e-6))
    return total / max(count, 1.0), kls


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2 ** 16), B=st.integers(1, 8), double=st.booleans(),
       prioritized=st.booleans(), tl=st.booleans())
def test_categorical_dqn_loss_matches_plain_loop(seed, B, double, prioritized, tl):
    agent = make_agent(CatDqnAgent, seed=seed % 5, n_atoms=11)
    algo = initialize(CategoricalDQN(V_min=-4, V_max=6, discount=0.9, double_dqn=double,
                                     prioritized_replay=prioritized, bootstrap_timelimit=tl,
                                     replay_size=100, batch_size=1, replay_ratio=1), agent)
    batch = random_batch(torch.Generator().manual_seed(seed), B)
    loss, kl = algo.loss(batch)
    ref_loss, ref_kl = reference_cat_loss(agent, batch, 0.9, double, prioritized, tl, -4, 6)
    assert loss.item() == pytest.approx(ref_loss, rel=1e-4, abs=1e-5)
    np.testing.assert_allclose(kl.numpy(), ref_kl, rtol=1e-4, atol=1e-5)


def test_categorical_dqn_sets_agent_support():
    agent = make_agent(CatDqnAgent, n_atoms=5)
    initialize(CategoricalDQN(V_min=0, V_max=8, replay_size=100, batch_size=1, replay_ratio=1),
               agent)
    torch.testing.assert_close(agent.distribution.z, torch.tensor([0.0, 2, 4, 6, 8]))
    step = agent.step(torch.zeros(2, OBS_DIM), torch.zeros(2, dtype=torch.long), torch.zeros(2))
    assert step.agent_info.p.shape == (2, N_ACTIONS, 5)
    with pytest.raises(TypeError, match="give_V_min_max"):
        initialize(CategoricalDQN(replay_size=100, batch_size=1, replay_ratio=1), make_agent())


# ---- epsilon-greedy schedule -------------------------------------------------------------------


def test_epsilon_schedule_is_linear_in_iterations():
    agent = make_agent(eps_init=1.0, eps_final=0.1, eps_itr_min=10, eps_itr_max=20, eps_eval=0.05)
    for itr, expected in [(0, 1.0), (10, 1.0), (15, 0.55), (20, 0.1), (5000, 0.1)]:
        agent.sample_mode(itr)
        assert agent.distribution.epsilon.item() == pytest.approx(expected)
    agent.eval_mode(7)
    assert agent.distribution.epsilon.item() == pytest.approx(0.05)


def test_epsilon_schedule_survives_save_and_resume():
    agent = make_agent(eps_final=0.1)
    agent.set_epsilon_itr_min_max(10, 20)  # As DQN does from eps_steps.
    agent.sample_mode(15)
    state = agent.state_dict()
    resumed = make_agent(seed=1)  # Default schedule (50 -> 1000) until the state is loaded.
    resumed.load_state_dict(state)
    assert resumed.distribution.epsilon.item() == pytest.approx(0.55)
    assert (resumed.eps_itr_min, resumed.eps_itr_max, resumed.eps_itr) == (10, 20, 15)
    resumed.sample_mode(3000)  # Past the decay: stays final (classic rlpyt restarted at 1).
    assert resumed.distribution.epsilon.item() == pytest.approx(0.1)


def test_dqn_sets_epsilon_schedule_from_env_steps():
    agent = make_agent()
    initialize(DQN(min_steps_learn=100, eps_steps=1000, replay_size=100, batch_size=10),
               agent, batch_spec=BatchSpec(5, 2))
    assert (agent.eps_itr_min, agent.eps_itr_max) == (10, 100)


def test_eps_final_min_gives_log_spaced_per_env_epsilons():
    agent = DqnAgent(eps_init=1.0, eps_final=0.1, eps_final_min=0.001, eps_itr_min=0,
                     eps_itr_max=10)
    agent.initialize(env_spaces(), global_B=8, env_ranks=[4, 5, 6, 7])
    agent.sample_mode(10)
    expected = np.logspace(-3, -1, 8)[4:]
    np.testing.assert_allclose(agent.distribution.epsilon.numpy(), expected, rtol=1e-5)
    agent.sample_mode(5)  # Halfway: each env halfway from 1 to its own final value.
    np.testing.assert_allclose(agent.distribution.epsilon.numpy(), (1 + expected) / 2, rtol=1e-5)
    step = agent.step(torch.zeros(4, OBS_DIM), torch.zeros(4, dtype=torch.long), torch.zeros(4))
    assert step.action.shape == (4,)
    agent.eval_mode(0)
    assert agent.distribution.epsilon.dim() == 0


def test_a_worker_copy_takes_the_epsilons_of_its_own_envs():
    """``collector_initialize`` (called on a sampler worker's or Ray actor's copy, which
    steps a slice of the envs the agent was initialized for) selects those envs' values."""
    agent = DqnAgent(eps_init=1.0, eps_final=0.1, eps_final_min=0.001, eps_itr_min=0,
                     eps_itr_max=10)
    agent.initialize(env_spaces(), global_B=8)
    agent.sample_mode(10)
    agent.collector_initialize(global_B=8, env_ranks=[2, 3])
    agent.sample_mode(10)
    np.testing.assert_allclose(agent.distribution.epsilon.numpy(), np.logspace(-3, -1, 8)[2:4],
                               rtol=1e-5)
    step = agent.step(torch.zeros(2, OBS_DIM), torch.zeros(2, dtype=torch.long), torch.zeros(2))
    assert step.action.shape == (2,)


def test_epsilon_greedy_acts_randomly_at_the_given_rate():
    agent = make_agent(eps_init=0.5, eps_itr_min=10, eps_itr_max=20)
    agent.sample_mode(0)
    torch.manual_seed(0)
    obs = torch.randn(4000, OBS_DIM)
    step = agent.step(obs, torch.zeros(4000, dtype=torch.long), torch.zeros(4000))
    greedy = agent.model(obs, None, None).argmax(-1)
    # Greedy w.p. 0.5 + 0.5 / N_ACTIONS (a random action may also be the greedy one).
    assert (step.action == greedy).float().mean().item() == pytest.approx(0.625, abs=0.03)
    torch.testing.assert_close(step.agent_info.q, agent.model(obs, None, None).detach())


@pytest.mark.parametrize("kwargs", [dict(eps_init=1.5), dict(eps_final_min=0.5, eps_final=0.1),
                                    dict(eps_itr_min=20, eps_itr_max=10)])
def test_epsilon_arguments_are_checked(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        DqnAgent(**kwargs)


# ---- agents ---------------------------------------------------------------------------------


def parameters_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                   b.state_dict().values()))


@pytest.mark.parametrize("cls", [DqnAgent, CatDqnAgent])
def test_agent_state_dict_round_trip_restores_target(cls, tmp_path):
    agent = make_agent(cls, seed=0)
    saved = tmp_path / "agent.pt"
    torch.save(agent.state_dict(), saved)
    restored = make_agent(cls, seed=1)
    assert not parameters_equal(restored.target_model, agent.target_model)
    restored.load_state_dict(torch.load(saved))
    assert parameters_equal(restored.model, agent.model)
    assert parameters_equal(restored.target_model, agent.target_model)
    assert not parameters_equal(restored.target_model, restored.model)


def test_agent_loads_plain_model_state_dict_into_model_and_target():
    agent, source = make_agent(seed=0), make_agent(seed=1)
    agent.load_state_dict(source.model.state_dict())
    assert parameters_equal(agent.model, source.model)
    assert parameters_equal(agent.target_model, source.model)


def test_update_target_hard_and_soft():
    agent = make_agent()
    model = {k: v.clone() for k, v in agent.model.state_dict().items()}
    old = {k: v.clone() for k, v in agent.target_model.state_dict().items()}
    agent.update_target(tau=0.25)
    for key, value in agent.target_model.state_dict().items():
        torch.testing.assert_close(value, 0.25 * model[key] + 0.75 * old[key])
    agent.update_target()
    assert parameters_equal(agent.target_model, agent.model)


def test_agent_call_target_and_step_shapes():
    agent = make_agent()
    for lead in [(), (5,), (3, 5)]:
        obs = torch.randn(*lead, OBS_DIM)
        act, rew = torch.zeros(lead, dtype=torch.long), torch.zeros(lead)
        q = agent(obs, act, rew)
        assert q.shape == (*lead, N_ACTIONS) and q.requires_grad
        target = agent.target(obs, act, rew)
        assert target.shape == q.shape and not target.requires_grad
    step = agent.step(torch.randn(5, OBS_DIM), torch.zeros(5, dtype=torch.long), torch.zeros(5))
    assert step.action.shape == (5,) and step.agent_info.q.shape == (5, N_ACTIONS)


def test_agent_rejects_continuous_actions():
    spaces = EnvSpaces(observation=FloatBox(-1, 1, shape=(3,)), action=FloatBox(-1, 1, shape=(2,)))
    with pytest.raises(TypeError, match="discrete action"):
        DqnAgent().initialize(spaces)


@pytest.mark.parametrize("cls, out_shape", [(AtariDqnAgent, (N_ACTIONS,)),
                                            (AtariCatDqnAgent, (N_ACTIONS, 7))])
def test_atari_agents_on_frame_stacks(cls, out_shape):
    kwargs = dict(n_atoms=7) if cls is AtariCatDqnAgent else {}
    agent = cls(model_kwargs=dict(dueling=True, fc_sizes=32), **kwargs)
    agent.initialize(env_spaces(obs_shape=(4, 104, 80), dtype="uint8"))
    obs = torch.randint(0, 256, (2, 3, 4, 104, 80), dtype=torch.uint8)
    out = agent(obs, torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3))
    assert out.shape == (2, 3, *out_shape)
    step = agent.step(obs[0], torch.zeros(3, dtype=torch.long), torch.zeros(3))
    assert step.action.shape == (3,)
    with pytest.raises(ValueError, match="image observations"):
        cls(**kwargs).initialize(env_spaces())


# ---- models ----------------------------------------------------------------------------------


def test_dueling_head_combines_value_and_mean_free_advantage():
    head = DuelingHeadModel(6, [8], N_ACTIONS)
    x = torch.randn(5, 6)
    advantage, value = head.advantage(x), head.value(x)
    torch.testing.assert_close(head(x), value + advantage - advantage.mean(-1, keepdim=True))
    dist_head = DistributionalDuelingHeadModel(6, [8], N_ACTIONS, n_atoms=7)
    logits = dist_head(torch.randn(2, 5, 6))
    assert logits.shape == (2, 5, N_ACTIONS, 7)


@pytest.mark.parametrize("cls", [AtariDqnModel, AtariCatDqnModel])
def test_atari_models_scale_pixels_and_keep_leading_dims(cls):
    model = cls(image_shape=(4, 104, 80), output_size=N_ACTIONS, fc_sizes=16)
    obs = torch.randint(0, 256, (4, 104, 80), dtype=torch.uint8)
    single = model(obs, None, None)
    batched = model(obs.expand(3, *obs.shape), None, None)
    torch.testing.assert_close(batched[1], single)
    torch.testing.assert_close(model(obs.float(), None, None), single)  # Same for float pixels.
    if cls is AtariCatDqnModel:
        torch.testing.assert_close(single.sum(-1), torch.ones(N_ACTIONS))


# ---- replay choice and the optimization loop -------------------------------------------------


def test_updates_per_optimize_and_its_error():
    assert updates_per_optimize(8, 32, 32) == 8
    assert updates_per_optimize(4, 16, 64) == 1
    with pytest.raises(ValueError, match=r"replay_ratio=1.*batch_size=64.*sampler batch of 8"):
        updates_per_optimize(1, 8, 64)
    with pytest.raises(ValueError, match="replay_ratio"):
        initialize(DQN(replay_ratio=1, batch_size=64), make_agent(), batch_spec=BatchSpec(1, 8))


def test_replay_class_rule():
    vector, frames = np.zeros(4, np.float32), np.zeros((4, 8, 8), np.uint8)
    assert replay_buffer_class(vector, False, False) is UniformReplayBuffer
    assert replay_buffer_class(vector, True, True) is TlPrioritizedReplayBuffer
    assert replay_buffer_class(vector, True, False, async_=True) is AsyncPrioritizedReplayBuffer
    assert replay_buffer_class(frames, True, False) is PrioritizedReplayFrameBuffer
    assert replay_buffer_class(frames, False, True) is TlUniformReplayFrameBuffer
    assert replay_buffer_class(np.zeros((8, 8), np.uint8), False, True) is TlUniformReplayBuffer


def test_dqn_builds_time_limit_replay_only_with_timeouts():
    algo = initialize(DQN(replay_size=100, batch_size=2), make_agent())
    assert isinstance(algo.replay_buffer, TlUniformReplayBuffer)
    algo = initialize(DQN(replay_size=100, batch_size=2, bootstrap_timelimit=False), make_agent())
    assert type(algo.replay_buffer) is UniformReplayBuffer
    with pytest.warns(UserWarning, match="timeout"):
        algo = initialize(DQN(replay_size=100, batch_size=2), make_agent(),
                          examples=examples(timeout=False))
    assert type(algo.replay_buffer) is UniformReplayBuffer


def test_dqn_with_wait_reset_collection_flags_filler_steps():
    """Wait-reset batches (classic rlpyt accepted them) store a flag that masks the filler
    steps after each env's first done, even without time limits to bootstrap."""
    algo = DQN(replay_size=100, batch_size=2, bootstrap_timelimit=False)
    algo.initialize(make_agent(), 10, BatchSpec(4, 2), mid_batch_reset=False,
                    examples=examples())
    assert "timeout" in algo.replay_buffer.samples._fields
    done = torch.tensor([[False, True], [True, False], [False, False], [False, True]])
    env = SimpleNamespace(done=done, env_info=SimpleNamespace(timeout=torch.ones_like(done)))
    flagged = algo.masked_steps(SimpleNamespace(env=env))
    assert flagged.tolist() == [[False, False], [False, True], [True, True], [True, True]]


def test_time_limit_frame_buffer_keeps_frames_and_timeouts():
    example = SamplesToBufferTl(observation=np.zeros((2, 3, 3), np.uint8), action=np.int64(0),
                                reward=np.float32(0), done=np.bool_(False),
                                timeout=np.bool_(False))
    for cls in (TlUniformReplayFrameBuffer, TlPrioritizedReplayFrameBuffer):
        buffer = cls(example, size=20, B=1, discount=0.5, n_step_return=2)
        T = 10
        frames = np.arange(T + 1, dtype=np.uint8)[:, None, None] * np.ones((3, 3), np.uint8)
        observation = np.stack([frames[:-1], frames[1:]], axis=1)[:, None]  # [T, 1, 2, 3, 3]
        done = np.zeros((T, 1), bool)
        done[4] = True
        timeout = done.copy()
        buffer.append_samples(SamplesToBufferTl(
            observation=observation, action=np.zeros((T, 1), np.int64),
            reward=np.ones((T, 1), np.float32), done=done, timeout=timeout))
        batch = buffer.extract_batch(np.arange(1, 8), np.zeros(7, np.int64))
        assert batch.timeout_n.tolist() == [False, False, True, True] + [False] * 3
        assert batch.agent_inputs.observation.shape == (7, 2, 3, 3)
        assert batch.agent_inputs.observation[0, -1, 0, 0].item() == 2  # Newest frame of step 1.


def test_optimize_agent_counts_updates_and_updates_target():
    agent = make_agent()
    algo = initialize(DQN(min_steps_learn=20, replay_size=200, batch_size=8, replay_ratio=16,
                          target_update_interval=3, learning_rate=1e-2), agent,
                      batch_spec=BatchSpec(2, 2))
    assert algo.updates_per_optimize == 8
    rng = torch.Generator().manual_seed(0)
    Samples = namedarraytuple("Samples", ["agent", "env"])
    AgentPart = namedarraytuple("AgentPart", ["action"])
    EnvPart = namedarraytuple("EnvPart", ["observation", "reward", "done", "env_info"])
    for itr in range(8):
        samples = Samples(
            agent=AgentPart(action=torch.randint(0, N_ACTIONS, (2, 2), generator=rng)),
            env=EnvPart(observation=torch.randn(2, 2, OBS_DIM, generator=rng),
                        reward=torch.randn(2, 2, generator=rng), done=torch.zeros(2, 2, dtype=bool),
                        env_info=EnvInfo(timeout=torch.zeros(2, 2, dtype=bool))))
        opt_info = algo.optimize_agent(itr, samples)
        learning = itr >= 5  # min_steps_learn=20 env steps, 4 per iteration.
        assert len(opt_info.loss) == (8 if learning else 0)
        assert all(math.isfinite(x) for x in opt_info.loss + opt_info.gradNorm)
    assert algo.update_counter == 24
    assert parameters_equal(agent.target_model, agent.model)  # 24 % 3 == 0: just copied.


def test_async_initialize_publishes_parameters_every_updates_per_sync():
    agent = make_agent()
    agent.async_cpu(share_memory=False)
    algo = DQN(min_steps_learn=0, replay_size=100, batch_size=4, replay_ratio=1,
               prioritized_replay=True, updates_per_sync=2)
    buffer = algo.async_initialize(agent, 100, BatchSpec(2, 2), True, examples())
    assert type(buffer).__name__ == "AsyncTlPrioritizedReplayBuffer"
    algo.optim_initialize(rank=0)
    rng = torch.Generator().manual_seed(1)
    step = SamplesToBufferTl(
        observation=torch.randn(4, 2, OBS_DIM, generator=rng),
        action=torch.zeros(4, 2, dtype=torch.long), reward=torch.ones(4, 2),
        done=torch.zeros(4, 2, dtype=torch.bool), timeout=torch.zeros(4, 2, dtype=torch.bool))
    buffer.append_samples(step)
    for itr in range(4):
        opt_info = algo.optimize_agent(itr, sampler_itr=itr)
        assert len(opt_info.loss) == 1
    assert agent.param_board.version == 2


def test_prioritized_beta_schedule():
    algo = initialize(DQN(prioritized_replay=True, pri_beta_init=0.4, pri_beta_final=1.0,
                          pri_beta_steps=100, replay_size=100, batch_size=2), make_agent(),
                      batch_spec=BatchSpec(5, 2))
    assert algo.pri_beta_at(0) == pytest.approx(0.46)
    assert algo.pri_beta_at(4) == pytest.approx(0.7)
    assert algo.pri_beta_at(50) == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs", [dict(discount=1.5), dict(batch_size=0),
                                    dict(target_update_tau=0), dict(delta_clip=-1),
                                    dict(n_step_return=0.5)])
def test_dqn_arguments_are_checked(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        DQN(**kwargs)


def test_no_warnings_on_exact_replay_ratio():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        initialize(DQN(replay_size=100, batch_size=4, replay_ratio=4), make_agent(),
                   batch_spec=BatchSpec(2, 2))


# ---- low-overhead update helpers (rlpyt.algos.dqn.optim) and fast paths --------------------


def _mlp_and_grads(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    x = torch.randn(8, 4)
    return model, x


@pytest.mark.parametrize("cls, kwargs", [
    (torch.optim.Adam, {}),
    (torch.optim.Adam, dict(weight_decay=0.01, amsgrad=True, betas=(0.8, 0.99))),
    (torch.optim.AdamW, dict(weight_decay=0.05)),
])
def test_fused_adam_step_matches_optimizer_step(cls, kwargs):
    from rlpyt.algos.optim import FusedAdamStep

    runs = []
    for fast in (False, True):
        model, x = _mlp_and_grads()
        optimizer = cls(model.parameters(), lr=1e-2, fused=True, **kwargs)
        stepper = FusedAdamStep(optimizer)
        for i in range(5):
            optimizer.zero_grad(set_to_none=True)
            model(x + i).square().mean().backward()
            stepper.step() if fast else optimizer.step()
        runs.append((model.state_dict(), optimizer.state_dict()))
    (model_a, opt_a), (model_b, opt_b) = runs
    for key in model_a:
        assert torch.equal(model_a[key], model_b[key]), key
    for index, state in opt_a["state"].items():
        for name, value in state.items():
            assert torch.equal(value, opt_b["state"][index][name]), (index, name)


def test_fused_adam_step_falls_back_and_follows_reloaded_state():
    from rlpyt.algos.optim import FusedAdamStep

    model, x = _mlp_and_grads()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, fused=True)
    stepper = FusedAdamStep(optimizer)
    assert not FusedAdamStep.applies(torch.optim.Adam(model.parameters()))  # Not fused.
    assert not FusedAdamStep.applies(torch.optim.SGD(model.parameters(), lr=0.1))
    calls = []
    handle = optimizer.register_step_post_hook(lambda *args: calls.append(1))
    model(x).sum().backward()
    stepper.step()  # Hooks: Adam.step runs them.
    assert calls == [1]
    handle.remove()
    saved = copy.deepcopy(optimizer.state_dict())
    stepper.step()
    optimizer.load_state_dict(saved)  # New state tensors: the stepper must use them.
    stepper.step()
    steps = [float(s["step"]) for s in optimizer.state.values()]
    assert steps == [2.0] * len(steps)
    assert all(float(s["step"]) == 1.0 for s in saved["state"].values())


def test_backward_helper_matches_tensor_backward():
    from rlpyt.algos.optim import backward

    grads = []
    for fast in (False, True):
        model, x = _mlp_and_grads()
        loss = model(x).square().mean()
        backward(loss) if fast else loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for a, b in zip(*grads):
        assert torch.equal(a, b)


@pytest.mark.parametrize("max_norm", [None, 1e-3, 1.0, 1e3])
def test_clip_grad_norm_matches_torch(max_norm):
    from rlpyt.algos.optim import clip_grad_norm

    results = []
    for ours in (False, True):
        model, x = _mlp_and_grads()
        model(x).square().sum().backward()
        params = list(model.parameters())
        if ours:
            norm = clip_grad_norm(params, max_norm)
        else:
            norm = torch.nn.utils.clip_grad_norm_(params, float("inf") if max_norm is None
                                                  else max_norm)
        results.append((norm, [p.grad.clone() for p in params]))
    (norm_t, grads_t), (norm_o, grads_o) = results
    assert norm_o.item() == pytest.approx(norm_t.item(), rel=1e-6)
    for a, b in zip(grads_t, grads_o):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dueling", [False, True])
def test_mlp_layer_plan_matches_module_calls(dueling):
    from rlpyt.models.dqn.mlp import CatDqnMlpModel, DqnMlpModel
    from rlpyt.models.mlp import MlpModel

    torch.manual_seed(0)
    obs = torch.randn(5, 7, 2, 3, dtype=torch.float64)
    for model, finish in (
        (DqnMlpModel((2, 3), N_ACTIONS, hidden_sizes=[8, 8], dueling=dueling), lambda q: q),
        (CatDqnMlpModel((2, 3), N_ACTIONS, n_atoms=5, hidden_sizes=[8, 8], dueling=dueling),
         lambda logits: torch.softmax(logits, -1)),
    ):
        def matches_module_calls(model=model, finish=finish) -> bool:
            expected = finish(model.head(model.trunk(obs.reshape(5, 7, 6).float())))
            return torch.equal(model(obs, None, None), expected)

        assert matches_module_calls()
        with torch.no_grad():  # The plan reads the parameters at call time.
            model.trunk.model[0].weight.mul_(2)
        assert matches_module_calls()
        model.trunk.model[2] = torch.nn.Linear(8, 8)  # a replaced layer is planned again
        assert matches_module_calls()
        model.trunk = MlpModel(6, [8])  # and so is a replaced trunk
        assert matches_module_calls()


def test_n_step_q_target_bool_and_float_done_agree():
    from rlpyt.algos.dqn.targets import n_step_q_target

    g = torch.Generator().manual_seed(0)
    return_, value = torch.randn(16, generator=g), torch.randn(16, generator=g)
    done = torch.rand(16, generator=g) < 0.4
    y_bool = n_step_q_target(return_, done, value, 0.9)
    y_float = n_step_q_target(return_, done.float(), value, 0.9)
    torch.testing.assert_close(y_bool, y_float)
    torch.testing.assert_close(y_bool, return_ + 0.9 * (~done).float() * value)


def test_dqn_skips_prev_inputs_only_for_models_that_ignore_them():
    algo = initialize(DQN(replay_size=100, batch_size=1, replay_ratio=1), make_agent())
    assert algo.replay_buffer.prev_inputs is False  # DqnMlpModel ignores them.

    class UsesPrev(torch.nn.Module):  # Any model without the declaration gets them.
        def __init__(self, observation_shape, output_size):
            super().__init__()
            self.linear = torch.nn.Linear(OBS_DIM, output_size)

        def forward(self, observation, prev_action, prev_reward):
            return self.linear(observation) + prev_reward.unsqueeze(-1)

    agent = make_agent(ModelCls=UsesPrev)
    algo = initialize(DQN(replay_size=100, batch_size=1, replay_ratio=1), agent)
    assert algo.replay_buffer.prev_inputs is True


def test_iteration_batches_equal_step_by_step_sampling():
    from rlpyt.algos.dqn.dqn import split_batch

    algo = initialize(DQN(replay_size=64, batch_size=4, replay_ratio=1), make_agent(),
                      batch_spec=BatchSpec(8, 2))
    rng = np.random.default_rng(0)
    algo.replay_buffer.append_samples(SamplesToBufferTl(
        observation=rng.standard_normal((8, 2, OBS_DIM), dtype=np.float32),
        action=rng.integers(0, N_ACTIONS, (8, 2)), reward=rng.standard_normal((8, 2)),
        done=rng.random((8, 2)) < 0.2, timeout=np.zeros((8, 2), bool)))
    np.random.seed(3)
    together = algo.iteration_batches(5)
    np.random.seed(3)
    apart = [algo.replay_buffer.sample_batch(4) for _ in range(5)]
    assert len(together) == 5
    for a, b in zip(together, apart):
        for x, y in zip(a.agent_inputs, b.agent_inputs):
            assert (x is None and y is None) or torch.equal(x, y)
        for field in ("action", "return_", "done_n", "timeout_n"):
            assert torch.equal(getattr(a, field), getattr(b, field))
    algo.prioritized_replay = True  # Prioritized (and async) replays sample per step.
    assert algo.iteration_batches(3) == [None, None, None]
    parts = split_batch(together[0], 2)
    assert [len(p.action) for p in parts] == [2, 2] and parts[0].agent_inputs.prev_action is None
