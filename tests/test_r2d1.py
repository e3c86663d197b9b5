"""R2D1: recurrent unrolls, loss, targets and priorities against plain-loop references;
agents and models; an Atari smoke run; learning on velocity-masked CartPole."""

from __future__ import annotations

import math
import time
from collections import namedtuple

import numpy as np
import pytest
import torch
from helpers import EndOfRun, k_of_n, make_learning_only, make_masked_cartpole, train_until
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.agents.dqn.atari.atari_r2d1_agent import AtariR2d1Agent
from rlpyt.agents.dqn.r2d1_agent import AgentInfo, R2d1Agent, R2d1AlternatingAgent
from rlpyt.algos.dqn.r2d1 import R2D1, burn_in, sequence_priorities, unroll
from rlpyt.algos.dqn.r2d1_replay import (
    R2d1PrioritizedSequenceReplayFrameBuffer,
    first_end_is_timeout,
)
from rlpyt.cli.presets import PRESETS
from rlpyt.envs.atari.atari_env import AtariEnv
from rlpyt.envs.base import EnvSpaces
from rlpyt.models.dqn.atari_r2d1_model import AtariR2d1Model
from rlpyt.models.dqn.r2d1_mlp import R2d1MlpModel
from rlpyt.models.rnn import RnnState
from rlpyt.replays.sequence.uniform import UniformSequenceReplayBuffer
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.samples import AgentSamples, BatchSpec, EnvSamples, Samples
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.buffer import torchify_buffer
from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.logging.context import logger_context
from rlpyt.utils.returns import inverse_value_rescale, value_rescale

FEW_EXAMPLES = settings(max_examples=25, deadline=None)

OBS_DIM, N_ACTIONS, LSTM = 3, 2, 6
EnvInfo = namedtuple("EnvInfo", ["timeout"])


# ---- plain-loop references ----------------------------------------------------------------

def h(x, eps):
    return math.copysign(math.sqrt(abs(x) + 1) - 1, x) + eps * x


def h_inv(x, eps):
    """Inverse of h by bisection (independent of the closed form under test)."""
    low, high = -1e12, 1e12
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if h(mid, eps) < x else (low, mid)
    return (low + high) / 2


def step_model(model, obs, prev_action, prev_reward, state):
    """One step of a recurrent Q model for a single env; state is (h, c) of [N, H]."""
    q, next_state = model(obs[None], torch.as_tensor([prev_action]),
                          torch.as_tensor([prev_reward], dtype=torch.float32),
                          RnnState(h=state[0][:, None], c=state[1][:, None]))
    return q[0], (next_state.h[:, 0], next_state.c[:, 0])


def loop_unroll(model, obs, prev_action, prev_reward, init, reset, detach_at=None):
    """Per env, per step, zeroing the state before steps with reset; ([T][B] q, final states)."""
    T, B = reset.shape
    outputs, finals = [[None] * B for _ in range(T)], []
    for b in range(B):
        state = (init.h[:, b], init.c[:, b])
        for t in range(T):
            if t == detach_at:
                state = tuple(s.detach() for s in state)
            if reset[t, b]:
                state = tuple(torch.zeros_like(s) for s in state)
            outputs[t][b], state = step_model(model, obs[t, b], prev_action[t, b],
                                              prev_reward[t, b], state)
        finals.append(state)
    return outputs, finals


# ---- fixtures -----------------------------------------------------------------------------

def small_agent(cls=R2d1Agent, seed=0):
    torch.manual_seed(seed)
    agent = cls(model_kwargs=dict(hidden_sizes=(8,), lstm_size=LSTM, head_sizes=(8,)))
    agent.initialize(EnvSpaces(observation=FloatBox(-1, 1, (OBS_DIM,)),
                               action=IntBox(0, N_ACTIONS)))
    with torch.no_grad():  # A target that differs from the model, to tell them apart.
        for p in agent.target_model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return agent


def examples():
    zeros = np.zeros((1, LSTM), np.float32)
    return dict(observation=np.zeros(OBS_DIM, np.float32), reward=np.float32(0),
                done=np.bool_(False), env_info=EnvInfo(timeout=np.bool_(False)),
                action=np.int64(0),
                agent_info=AgentInfo(q=np.zeros(N_ACTIONS, np.float32),
                                     prev_rnn_state=RnnState(h=zeros, c=zeros)))


def make_algo(T, B, mid_batch_reset=True, **kwargs):
    agent = small_agent()
    config = dict(discount=0.9, batch_T=4, batch_B=3, warmup_T=3, store_rnn_state_interval=2,
                  n_step_return=3, replay_size=200 * B, min_steps_learn=0, pri_eta=0.7,
                  value_scale_eps=1e-2)
    config.update(kwargs)
    algo = R2D1(**config)
    algo.initialize(agent, n_itr=1, batch_spec=BatchSpec(T, B), mid_batch_reset=mid_batch_reset,
                    examples=examples())
    return algo, agent


def random_stream(T, B, seed, p_done=0.2, p_timeout=0.4, wait_reset=False, batch_T=8):
    """numpy fields of a [T, B] sampler stream; prev inputs are null at episode starts.
    With ``wait_reset``, steps after a done are filler until the end of the batch of
    ``batch_T`` steps."""
    rng = np.random.default_rng(seed)
    action = rng.integers(0, N_ACTIONS, (T, B))
    reward = rng.normal(size=(T, B)).astype(np.float32)
    done = rng.random((T, B)) < p_done
    if wait_reset:  # Filler after a done until the batch ends: done, zero reward.
        blocks = done.reshape(-1, batch_T, B)
        after = (np.cumsum(blocks, axis=1) - blocks > 0).reshape(T, B)
        done, reward = done | after, np.where(after, 0, reward).astype(np.float32)
    timeout = done & (rng.random((T, B)) < p_timeout)
    start = np.zeros((T, B), bool)
    start[1:] = done[:-1]
    prev_action = np.where(start, 0, np.concatenate([np.zeros((1, B), int), action[:-1]]))
    prev_reward = np.where(start, 0, np.concatenate([np.zeros((1, B)), reward[:-1]]))
    return dict(
        observation=rng.normal(size=(T, B, OBS_DIM)).astype(np.float32), action=action,
        prev_action=prev_action, reward=reward, prev_reward=prev_reward.astype(np.float32),
        done=done, timeout=timeout, q=rng.normal(size=(T, B, N_ACTIONS)).astype(np.float32),
        h=rng.normal(size=(T, B, 1, LSTM)).astype(np.float32),
        c=rng.normal(size=(T, B, 1, LSTM)).astype(np.float32),
    )


def to_samples(s):
    agent = AgentSamples(action=s["action"], prev_action=s["prev_action"],
                         agent_info=AgentInfo(q=s["q"], prev_rnn_state=RnnState(s["h"], s["c"])))
    env = EnvSamples(observation=s["observation"], reward=s["reward"],
                     prev_reward=s["prev_reward"], done=s["done"],
                     env_info=EnvInfo(timeout=s["timeout"]))
    return torchify_buffer(Samples(agent=agent, env=env))


# ---- value rescaling and priorities -------------------------------------------------------

finite = st.floats(-1e5, 1e5, allow_nan=False)


@FEW_EXAMPLES
@given(x=finite, eps=st.sampled_from([0.0, 1e-3, 1e-2]))
def test_value_rescale_round_trip_and_formula(x, eps):
    t = torch.tensor([x], dtype=torch.float64)
    assert value_rescale(t, eps).item() == pytest.approx(h(x, eps), rel=1e-12, abs=1e-12)
    assert inverse_value_rescale(value_rescale(t, eps), eps).item() == pytest.approx(
        x, rel=1e-9, abs=1e-9)
    if eps > 0:
        assert inverse_value_rescale(t, eps).item() == pytest.approx(h_inv(x, eps), rel=1e-6,
                                                                    abs=1e-6)


@FEW_EXAMPLES
@given(seed=st.integers(0, 2**16), T=st.integers(1, 6), B=st.integers(1, 4),
       eta=st.floats(0, 1))
def test_sequence_priorities_match_loop(seed, T, B, eta):
    rng = np.random.default_rng(seed)
    td = rng.random((T, B))
    valid = rng.random((T, B)) < 0.7
    result = sequence_priorities(torch.tensor(td), torch.tensor(valid), eta)
    for b in range(B):
        values = [td[t, b] for t in range(T) if valid[t, b]]
        expected = eta * max(values) + (1 - eta) * sum(values) / len(values) if values else 0.0
        assert result[b].item() == pytest.approx(expected)


@FEW_EXAMPLES
@given(seed=st.integers(0, 2**16), n=st.integers(1, 4))
def test_first_end_is_timeout_matches_loop(seed, n):
    rng = np.random.default_rng(seed)
    done = rng.random((9, 3)) < 0.3
    timeout = done & (rng.random((9, 3)) < 0.5)
    result = first_end_is_timeout(done, timeout, n)
    for t in range(9 - n + 1):
        for b in range(3):
            ends = [k for k in range(n) if done[t + k, b]]
            assert result[t, b] == (bool(ends) and timeout[t + ends[0], b])
    assert np.array_equal(first_end_is_timeout(torch.tensor(done), torch.tensor(timeout), n),
                          result)


# ---- recurrent unrolls with episode resets ------------------------------------------------

@FEW_EXAMPLES
@given(seed=st.integers(0, 2**16), T=st.integers(1, 7), B=st.integers(1, 4),
       p_reset=st.sampled_from([0.0, 0.3, 0.8]), zero_init=st.booleans())
def test_unroll_and_burn_in_match_step_by_step_loop(seed, T, B, p_reset, zero_init):
    torch.manual_seed(seed)
    model = R2d1MlpModel((OBS_DIM,), N_ACTIONS, hidden_sizes=(5,), lstm_size=4, head_sizes=None)
    inputs = (torch.randn(T, B, OBS_DIM), torch.randint(0, N_ACTIONS, (T, B)), torch.randn(T, B))
    reset = torch.rand(T, B) < p_reset
    if zero_init:
        init, given_init = RnnState(h=torch.zeros(1, B, 4), c=torch.zeros(1, B, 4)), None
    else:
        init = given_init = RnnState(h=torch.randn(1, B, 4), c=torch.randn(1, B, 4))
    with torch.no_grad():
        output = unroll(model, inputs, given_init, reset)
        final = burn_in(model, inputs, given_init, reset)
        expected, expected_final = loop_unroll(model, *inputs, init, reset)
    assert output.shape == (T, B, N_ACTIONS)
    for t in range(T):
        for b in range(B):
            assert torch.allclose(output[t, b], expected[t][b], atol=1e-5)
    for b in range(B):
        assert torch.allclose(final.h[:, b], expected_final[b][0], atol=1e-5)
        assert torch.allclose(final.c[:, b], expected_final[b][1], atol=1e-5)


# ---- the loss against a plain-loop reference ----------------------------------------------

LOSS_CASES = {
    "default": dict(),
    "no_double_no_rescale": dict(double_dqn=False, value_scale_eps=None),
    "huber_uniform": dict(delta_clip=0.5, prioritized_replay=False),
    "no_timelimit": dict(bootstrap_timelimit=False),
    "no_warmup": dict(warmup_T=0),
    "wait_reset": dict(mid_batch_reset=False),
}


def reference_loss(algo, agent, s, starts, envs, is_weights):
    """Loss (with autograd), priorities and |TD| from per-step loops over the raw stream."""
    wT, bT, n, gamma = algo.warmup_T, algo.batch_T, algo.n_step_return, algo.discount
    eps = algo.value_scale_eps
    rescale = (lambda x: h(x, eps)) if eps is not None else (lambda x: x)
    unscale = (lambda x: h_inv(x, eps)) if eps is not None else (lambda x: x)
    L = wT + bT + n
    total, count, priorities = 0.0, 0, []
    for t0, b, w in zip(starts, envs, is_weights):
        steps = range(t0, t0 + L)
        reset = torch.tensor([[bool(s["done"][t - 1, b])] for t in steps])
        obs = torch.tensor(np.stack([s["observation"][t, b] for t in steps]))[:, None]
        prev_a = torch.tensor([[s["prev_action"][t, b]] for t in steps])
        prev_r = torch.tensor([[s["prev_reward"][t, b]] for t in steps])
        init = RnnState(h=torch.tensor(s["h"][t0, b])[:, None],
                        c=torch.tensor(s["c"][t0, b])[:, None])
        q, _ = loop_unroll(agent.model, obs, prev_a, prev_r, init, reset, detach_at=wT)
        with torch.no_grad():
            target_q, _ = loop_unroll(agent.target_model, obs, prev_a, prev_r, init, reset)
        td, valid = [], []
        for k in range(wT, wT + bT):
            t = t0 + k
            return_, end, truncated = 0.0, False, False
            for i in range(n):
                return_ += gamma ** i * float(s["reward"][t + i, b])
                if s["done"][t + i, b]:
                    end, truncated = True, bool(s["timeout"][t + i, b])
                    break
            next_action = int(torch.argmax(q[k + n][0])) if algo.double_dqn else \
                int(torch.argmax(target_q[k + n][0]))
            bootstrap = 0.0 if end else gamma ** n * unscale(float(target_q[k + n][0][next_action]))
            y = rescale(return_ + bootstrap)
            delta = y - q[k][0][int(s["action"][t, b])]
            ok = not (truncated and algo.bootstrap_timelimit)
            if not algo.mid_batch_reset:  # Valid through the sequence's first done only.
                ok = ok and not any(s["done"][t0 + j, b] for j in range(k))
            if algo.delta_clip is None:
                loss_k = 0.5 * delta ** 2
            else:
                a = abs(delta)
                loss_k = 0.5 * a ** 2 if a <= algo.delta_clip else \
                    algo.delta_clip * (a - 0.5 * algo.delta_clip)
            if ok:
                total = total + (w if algo.prioritized_replay else 1.0) * loss_k
                count += 1
            abs_delta = abs(delta.item())
            if algo.delta_clip is not None:
                abs_delta = min(abs_delta, algo.delta_clip)
            td.append(abs_delta)
            valid.append(ok)
        used = [d for d, v in zip(td, valid) if v]
        priorities.append(algo.pri_eta * max(used, default=0.0)
                          + (1 - algo.pri_eta) * (sum(used) / len(used) if used else 0.0))
    return total / max(count, 1), priorities


@pytest.mark.parametrize("case", sorted(LOSS_CASES))
def test_loss_matches_plain_loop_reference(case):
    kwargs = dict(LOSS_CASES[case])
    mid_batch_reset = kwargs.pop("mid_batch_reset", True)
    T_stream, B = 40, 3
    algo, agent = make_algo(T=T_stream, B=B, mid_batch_reset=mid_batch_reset, **kwargs)
    s = random_stream(T_stream, B, seed=1, wait_reset=not mid_batch_reset)
    algo.replay_buffer.append_samples(algo.samples_to_buffer(to_samples(s)))
    starts = np.array([2, 8, 14, 20, 26, 4])  # Multiples of store_rnn_state_interval.
    envs = np.array([0, 1, 2, 0, 1, 2])
    batch = algo.replay_buffer.extract_batch(starts, envs)
    is_weights = np.linspace(0.5, 1.0, len(starts)).astype(np.float32)
    if algo.prioritized_replay:
        Batch = namedarraytuple("Batch", batch._fields + ("is_weights",))
        batch = Batch(*batch, is_weights=torch.tensor(is_weights))
    assert batch.episode_start.any(), "the batch should cross episode boundaries"
    loss, td_abs, valid, priorities = algo.loss(batch)
    expected, expected_priorities = reference_loss(algo, agent, s, starts, envs, is_weights)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-4, abs=1e-6)
    assert priorities.tolist() == pytest.approx(expected_priorities, rel=1e-4, abs=1e-6)
    # Same gradients: burn-in steps and the target network get none.
    grads = torch.autograd.grad(loss, list(agent.model.parameters()))
    expected_grads = torch.autograd.grad(expected, list(agent.model.parameters()),
                                         allow_unused=True)
    for g, e in zip(grads, expected_grads):
        assert torch.allclose(g, torch.zeros_like(g) if e is None else e, atol=1e-5)


def test_loss_with_a_plain_sequence_replay_class():
    """A ``ReplayBufferCls`` without the R2D1 extras: actions and episode starts are rebuilt
    from ``all_action`` and ``done``, exact for sequences that do not start an episode."""
    algo, agent = make_algo(T=40, B=3, ReplayBufferCls=UniformSequenceReplayBuffer,
                            prioritized_replay=False, bootstrap_timelimit=False)
    s = random_stream(40, 3, seed=11)
    algo.replay_buffer.append_samples(algo.samples_to_buffer(to_samples(s)))
    starts = np.array([t for t in range(2, 27, 2) if not s["done"][t - 1, 0]][:4])
    envs = np.zeros(len(starts), dtype=int)
    batch = algo.replay_buffer.extract_batch(starts, envs)
    assert "episode_start" not in batch._fields and batch.done.any()
    loss, _, _, priorities = algo.loss(batch)
    expected, expected_priorities = reference_loss(algo, agent, s, starts, envs,
                                                   np.ones(len(starts)))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-4, abs=1e-6)
    assert priorities.tolist() == pytest.approx(expected_priorities, rel=1e-4, abs=1e-6)


def test_burn_in_gets_no_gradient():
    algo, agent = make_algo(T=40, B=3)
    s = random_stream(40, 3, seed=3, p_done=0.0)
    algo.replay_buffer.append_samples(algo.samples_to_buffer(to_samples(s)))
    batch = algo.replay_buffer.extract_batch(np.array([4, 10]), np.array([0, 1]))
    Batch = namedarraytuple("Batch", batch._fields + ("is_weights",))
    obs = batch.all_observation.clone().requires_grad_(True)
    batch = Batch(*batch._replace(all_observation=obs), is_weights=torch.ones(2))
    loss = algo.loss(batch)[0]
    (grad,) = torch.autograd.grad(loss, obs)
    wT = algo.warmup_T
    assert grad[:wT].abs().sum() == 0 and grad[wT:].abs().sum() > 0


# ---- input priorities ---------------------------------------------------------------------

@pytest.mark.parametrize("mid_batch_reset", [True, False])
@pytest.mark.parametrize("warmup_T, interval", [(3, 2), (4, 4), (0, 3), (6, 5)])
def test_input_priorities_match_loop(mid_batch_reset, warmup_T, interval):
    T, B = 12, 3
    algo, _ = make_algo(T=T, B=B, mid_batch_reset=mid_batch_reset, warmup_T=warmup_T,
                        store_rnn_state_interval=interval, delta_clip=2.0)
    s = random_stream(T, B, seed=5, wait_reset=not mid_batch_reset, batch_T=T)
    result = algo.compute_input_priorities(to_samples(s))
    n, gamma, eps, eta = algo.n_step_return, algo.discount, algo.value_scale_eps, algo.pri_eta
    td, valid = np.zeros((T - n, B)), np.zeros((T - n, B), bool)
    for b in range(B):
        for t in range(T - n):
            return_, end, truncated = 0.0, False, False
            for i in range(n):
                return_ += gamma ** i * s["reward"][t + i, b]
                if s["done"][t + i, b]:
                    end, truncated = True, bool(s["timeout"][t + i, b])
                    break
            bootstrap = 0.0 if end else gamma ** n * h_inv(float(s["q"][t + n, b].max()), eps)
            y = h(return_ + bootstrap, eps)
            td[t, b] = min(abs(y - s["q"][t, b, s["action"][t, b]]), algo.delta_clip)
            valid[t, b] = not truncated and (
                mid_batch_reset or not any(s["done"][j, b] for j in range(t)))

    def priority(values):
        return eta * max(values) + (1 - eta) * sum(values) / len(values) if values else 0.0

    shift = warmup_T // interval
    assert result.shape == (T, B)  # One per step: the replay picks the row starts.
    for b in range(B):
        whole = priority([td[t, b] for t in range(T - n) if valid[t, b]])
        for start in range(T):
            first = start + warmup_T - shift * interval
            window = [td[t, b] for t in range(first, first + algo.batch_T)
                      if 0 <= t < T - n and valid[t, b]]
            assert result[start, b] == pytest.approx(priority(window) if window else whole,
                                                     rel=1e-5)


# ---- replay extras ------------------------------------------------------------------------

def test_replay_extras_match_stream():
    algo, _ = make_algo(T=40, B=3)
    s = random_stream(40, 3, seed=7)
    algo.replay_buffer.append_samples(algo.samples_to_buffer(to_samples(s)))
    starts, envs = np.array([2, 6, 12]), np.array([0, 2, 1])
    batch = algo.replay_buffer.extract_batch(starts, envs)
    wT, bT, n = algo.warmup_T, algo.batch_T, algo.n_step_return
    for j, (t0, b) in enumerate(zip(starts, envs)):
        for k in range(wT + bT + n):
            assert batch.episode_start[k, j] == s["done"][t0 + k - 1, b]
        for k in range(wT + bT):
            assert batch.action[k, j] == s["action"][t0 + k, b]
            ends = [i for i in range(n) if s["done"][t0 + k + i, b]]
            assert batch.timeout_n[k, j] == (bool(ends) and s["timeout"][t0 + k + ends[0], b])
        assert np.allclose(batch.init_rnn_state.h[j], s["h"][t0, b])


def test_replay_size_is_rounded_to_the_state_interval():
    algo, _ = make_algo(T=8, B=3, replay_size=100, store_rnn_state_interval=4, warmup_T=0,
                        batch_T=2, n_step_return=1)
    assert algo.replay_buffer.T == 32 and algo.replay_buffer.T % 4 == 0


def test_bad_settings_raise_clear_errors():
    with pytest.raises(ValueError, match="warmup_T=-1"):
        R2D1(warmup_T=-1)
    with pytest.raises(ValueError, match="pri_eta=1.5"):
        R2D1(pri_eta=1.5)
    feed_forward_info = namedtuple("AgentInfo", ["q"])(q=np.zeros(N_ACTIONS, np.float32))
    with pytest.raises(TypeError, match="prev_rnn_state"):
        R2D1().initialize(small_agent(), 1, BatchSpec(80, 2), True,
                          dict(examples(), agent_info=feed_forward_info))


# ---- sampler batches that do not line up with the stored-state interval ----------------------

def reference_states(model, buf, B):
    """Per env, the recurrent state before each stored step, by a plain loop over the
    replay's steps with the model (zero at the first step and at episode starts, where
    the agent also saw the null action and zero reward)."""
    s, count = buf.samples, buf.count
    assert count <= buf.T, "the reference reads the whole history from the ring"
    states = np.zeros((count, B, 2, 1, LSTM), np.float32)
    for b in range(B):
        state = (torch.zeros(1, LSTM), torch.zeros(1, LSTM))
        for t in range(count):
            start = t == 0 or bool(s.done[t - 1, b])
            if start:
                state = (torch.zeros(1, LSTM), torch.zeros(1, LSTM))
            states[t, b, 0], states[t, b, 1] = state[0].numpy(), state[1].numpy()
            prev_action = 0 if start else int(s.action[t - 1, b])
            prev_reward = 0.0 if start else float(s.reward[t - 1, b])
            with torch.no_grad():
                _, state = step_model(model, torch.as_tensor(s.observation[t, b]),
                                      prev_action, prev_reward, state)
    return states


@pytest.mark.parametrize("sampler_T, prioritized", [(30, True), (40, True), (50, True),
                                                     (30, False)])
def test_any_sampler_batch_T_with_a_state_interval_of_40(sampler_T, prioritized, run_dir):
    """Sampler batches of 30, 40 or 50 steps with states stored every 40: the replay holds
    the appended stream, sequences start only every 40 steps, and the state stored there
    is the one the agent had at that step."""
    B, interval = 2, 40
    n_itr = 360 // sampler_T
    sampler = SerialSampler(EnvCls=make_masked_cartpole, env_kwargs={}, batch_T=sampler_T,
                            batch_B=B, max_decorrelation_steps=0)
    # Updates sample the replay during the run; learning_rate=0 keeps the sampling model.
    algo = R2D1(batch_T=8, batch_B=6, warmup_T=40, store_rnn_state_interval=interval,
                n_step_return=2, min_steps_learn=400, replay_size=400 * B, learning_rate=0.0,
                prioritized_replay=prioritized)
    agent = R2d1Agent(model_kwargs=dict(hidden_sizes=(8,), lstm_size=LSTM, head_sizes=(8,)))
    runner = MinibatchRl(algo=algo, agent=agent, sampler=sampler, seed=1,
                         n_steps=n_itr * sampler_T * B, log_interval_steps=10**9)
    with logger_context(str(run_dir), 0, "r2d1_batch_T", override_prefix=True):
        runner.train()
    buf = algo.replay_buffer
    assert buf.count == n_itr * sampler_T and buf.rows_begun() == math.ceil(buf.count / 40)
    assert algo.update_counter > 0
    states = reference_states(agent.model, buf, B)
    # Every row begun holds the state at its start step; every valid row extracts it.
    for u in range(buf.rows_begun()):
        stored = buf.samples_prev_rnn_state[u]
        assert np.allclose(stored.h, states[u * interval, :, 0], atol=1e-6)
        assert np.allclose(stored.c, states[u * interval, :, 1], atol=1e-6)
    low, high = buf.valid_row_range()
    length = algo.warmup_T + algo.batch_T + algo.n_step_return
    assert (high - 1) * interval + length <= buf.count < high * interval + length
    # Sampled starts are on the 40-step grid, with the agent's state there.
    np.random.seed(0)
    batch = buf.sample_batch(32)
    if prioritized:
        rows, envs, _ = buf._sampled
        starts = rows * interval
        assert buf.priority_tree.count == buf.rows_begun()
        valid = buf.priority_tree.leaf_values() > 0
        assert valid.sum() == (high - low) * B and valid[low:high].all()
    else:
        np.random.seed(0)
        starts, envs = buf.sample_idxs(32)
    assert np.all(starts % interval == 0)
    assert np.all((starts // interval >= low) & (starts // interval < high))
    for i, (t0, b) in enumerate(zip(starts, envs)):
        assert np.allclose(batch.init_rnn_state.h[i].numpy(), states[t0, b, 0], atol=1e-6)
        assert np.allclose(batch.all_observation[:, i].numpy(),
                           buf.samples.observation[t0:t0 + length, b])


def test_r2d1_trains_with_sampler_batch_T_30_and_state_interval_40(run_dir):
    """The classic ``r2d1_gpu_basic`` shape (sampler batch_T=30, states every 40), short."""
    torch.manual_seed(0)
    sampler = SerialSampler(EnvCls=make_masked_cartpole, env_kwargs={}, batch_T=30, batch_B=4,
                            max_decorrelation_steps=0)
    algo = R2D1(batch_T=20, batch_B=8, warmup_T=20, store_rnn_state_interval=40,
                n_step_return=3, min_steps_learn=600, replay_size=4000, replay_ratio=2,
                target_update_interval=20)
    agent = R2d1Agent(model_kwargs=dict(hidden_sizes=(16,), lstm_size=16, head_sizes=(16,)))
    runner = MinibatchRl(algo=algo, agent=agent, sampler=sampler, n_steps=3000, seed=0,
                         log_interval_steps=1500)
    with logger_context(str(run_dir), 0, "r2d1_30_40", override_prefix=True):
        runner.train()
    # 3000 steps, learning from step 600: 2 * 2400 / 160 = 30 updates.
    assert algo.update_counter >= 25
    assert algo.replay_buffer.count == 750 and algo.replay_buffer.rows_begun() == 19
    assert all(torch.isfinite(p).all() for p in agent.model.parameters())


# ---- optimisation bookkeeping -------------------------------------------------------------

def test_fractional_replay_ratio_and_target_updates():
    T, B = 8, 2  # 16 env steps per iteration; 4 * 2 = 8 trained steps per update.
    algo, agent = make_algo(T=T, B=B, batch_T=4, batch_B=2, warmup_T=2,
                            store_rnn_state_interval=2, n_step_return=1, replay_ratio=0.25,
                            target_update_interval=3, min_steps_learn=0)
    n_updates = []
    for itr in range(12):
        s = random_stream(T, B, seed=itr)
        info = algo.optimize_agent(itr, to_samples(s))
        n_updates.append(len(info.loss))
    # 0.25 * 16 / 8 = 0.5 updates per iteration: one every other iteration, once sampleable.
    assert sum(n_updates) == algo.update_counter
    assert set(n_updates) <= {0, 1} and 4 <= sum(n_updates) <= 6
    params = dict(agent.model.named_parameters())
    synced = all(torch.equal(params[k], v) for k, v in agent.target_model.named_parameters())
    assert synced == (algo.update_counter % 3 == 0)
    state = algo.state_dict()
    assert set(state) == {"optim", "update_counter", "update_credit"}


# ---- agents and models --------------------------------------------------------------------

def test_agent_step_records_prev_rnn_state_and_resets():
    agent = small_agent()
    agent.sample_mode(0)
    obs, act, rew = torch.randn(4, OBS_DIM), torch.zeros(4, dtype=torch.long), torch.zeros(4)
    first = agent.step(obs, act, rew)
    assert first.agent_info.q.shape == (4, N_ACTIONS)
    assert first.agent_info.prev_rnn_state.h.shape == (4, 1, LSTM)
    assert torch.count_nonzero(first.agent_info.prev_rnn_state.h) == 0
    state_after_first = agent.prev_rnn_state
    second = agent.step(obs, act, rew)
    assert torch.equal(second.agent_info.prev_rnn_state.h, state_after_first.h.transpose(0, 1))
    agent.reset_one(2)
    assert torch.count_nonzero(agent.prev_rnn_state.h[:, 2]) == 0
    assert torch.count_nonzero(agent.prev_rnn_state.h[:, 1]) > 0
    q, next_state = agent(obs[None], act[None], rew[None], state_after_first)
    assert q.shape == (1, 4, N_ACTIONS) and next_state.h.shape == (1, 4, LSTM)


def test_agent_state_dict_restores_target_and_epsilon():
    agent, other = small_agent(seed=0), small_agent(seed=1)
    agent.sample_mode(500)
    other.load_state_dict(agent.state_dict())
    for a, b in zip(agent.target_model.parameters(), other.target_model.parameters()):
        assert torch.equal(a, b)
    assert other.eps_itr == 500


def test_alternating_agent_sets_epsilon_and_keeps_two_states():
    agent = small_agent(R2d1AlternatingAgent)
    agent.set_epsilon_itr_min_max(0, 10)
    agent.sample_mode(5)
    assert agent.distribution.epsilon.item() == pytest.approx(agent.epsilon_at(5))
    agent.eval_mode(5)
    assert agent.distribution.epsilon.item() == pytest.approx(agent.eps_eval)
    agent.set_alternating_groups((2, 2))
    agent.sample_mode(6)
    obs, act, rew = torch.randn(2, OBS_DIM), torch.zeros(2, dtype=torch.long), torch.zeros(2)
    agent.step(obs, act, rew)  # Group 0.
    agent.step(-obs, act, rew)  # Group 1.
    group0 = agent.step(obs, act, rew)
    with torch.no_grad():
        _, expected = agent.model(obs, act, rew, None)
    assert torch.allclose(group0.agent_info.prev_rnn_state.h, expected.h.transpose(0, 1))


@pytest.mark.parametrize("dueling", [False, True])
def test_atari_r2d1_model_shapes(dueling):
    model = AtariR2d1Model((4, 104, 80), 6, fc_size=32, lstm_size=16, head_size=8,
                           dueling=dueling)
    for lead in [(), (3,), (5, 3)]:
        image = torch.randint(0, 256, lead + (4, 104, 80), dtype=torch.uint8)
        q, state = model(image, torch.zeros(lead, dtype=torch.long), torch.zeros(lead), None)
        assert q.shape == lead + (6,)
        assert state.h.shape == (1, (lead[-1] if lead else 1), 16)


def test_r2d1_mlp_model_uses_previous_action_and_reward():
    torch.manual_seed(0)
    model = R2d1MlpModel((OBS_DIM,), N_ACTIONS)
    obs = torch.randn(2, OBS_DIM)
    base = model(obs, torch.tensor([0, 0]), torch.zeros(2), None)[0]
    assert not torch.allclose(base, model(obs, torch.tensor([1, 1]), torch.zeros(2), None)[0])
    assert not torch.allclose(base, model(obs, torch.tensor([0, 0]), torch.ones(2), None)[0])


# ---- runs ---------------------------------------------------------------------------------

def test_atari_r2d1_smoke(run_dir):
    """A few thousand Pong steps with AtariR2d1Agent: frame sequence replay, updates run."""
    sampler = SerialSampler(EnvCls=AtariEnv, env_kwargs=dict(game="pong"), batch_T=20,
                            batch_B=2, max_decorrelation_steps=0)
    algo = R2D1(batch_T=10, batch_B=4, warmup_T=5, store_rnn_state_interval=10,
                min_steps_learn=400, replay_size=2000, replay_ratio=1, n_step_return=3,
                target_update_interval=5)
    agent = AtariR2d1Agent(model_kwargs=dict(fc_size=32, lstm_size=32, head_size=32,
                                             channels=(8, 16, 16)))
    runner = MinibatchRl(algo=algo, agent=agent, sampler=sampler, n_steps=2000, seed=0,
                         log_interval_steps=1000)
    with logger_context(str(run_dir), 0, "r2d1_pong", override_prefix=True):
        runner.train()
    assert isinstance(algo.replay_buffer, R2d1PrioritizedSequenceReplayFrameBuffer)
    assert algo.update_counter >= 20
    assert all(torch.isfinite(p).all() for p in agent.model.parameters())


@pytest.mark.learning
@make_learning_only("R2D1 on masked CartPole (test_async_learning.py's R2D2 test trains the "
                    "same algorithm and settings on that task under AsyncRl in make test, "
                    "and the unit tests above its sequence replay and loss)")
def test_r2d1_learns_masked_cartpole(tmp_path):
    """R2D1 with the default recurrent model and the ``r2d1`` preset's algorithm balances
    velocity-masked CartPole (needs memory): 400 within 300k steps and a mean of at
    least 360 over the two evaluations after, in 2 of 3 seeds (``make learning`` only:
    a seed takes 110k-240k steps, 2-3 minutes of CI).

    The preset's 5-step targets copied every 25 updates let the values see about 500
    steps ahead.  Before, with 3-step targets copied every 100 updates (72 steps by
    200k), seed 0 of the CI run of 2026-11-25 reached 400 and ended at 327; at the
    budget's end (2026-11-27, 300k steps) 1 of 3 seeds held 360, now 3 of 3 (455-500;
    docs/notes/r2d1_horizon.md)."""
    torch.set_num_threads(1)
    end_of_run = EndOfRun(400)

    def train_seed(seed: int) -> list:
        sampler = SerialSampler(EnvCls=make_masked_cartpole, env_kwargs={}, batch_T=20,
                                batch_B=16, max_decorrelation_steps=0, eval_n_envs=4,
                                eval_max_trajectories=8)
        start = time.time()
        summary = train_until(R2D1(**PRESETS["r2d1"].algo_kwargs), R2d1Agent(), sampler,
                              n_steps=300_000, seed=seed, end_of_run=end_of_run,
                              log_dir=tmp_path / str(seed), log_interval_steps=10_000)
        print(f"R2D1 masked CartPole seed {seed}: {time.time() - start:.0f} s", flush=True)
        return summary["eval_history"]

    k_of_n(train_seed, range(3), 2, end_of_run, "R2D1 masked CartPole")
