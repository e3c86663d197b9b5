"""A2C and PPO on hand-built sample batches with tiny test-double agents."""

from __future__ import annotations

import copy

import pytest
import torch

from rlpyt.algos.base import clip_grad_norm, make_optimizer
from rlpyt.algos.pg.a2c import A2C
from rlpyt.algos.pg.base import OptInfo
from rlpyt.algos.pg.ppo import PPO, PpoOptInfo, segment_valid_mean
from rlpyt.distributions.categorical import Categorical, DistInfo
from rlpyt.samplers.samples import AgentSamplesBsv, BatchSpec, EnvSamples, Samples
from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.tensor import valid_mean

EnvInfo = namedarraytuple("EnvInfo", ["timeout"])
AgentInfo = namedarraytuple("AgentInfo", ["dist_info", "value"])
AgentInfoRnn = namedarraytuple("AgentInfoRnn", ["dist_info", "value", "prev_rnn_state"])
RnnState = namedarraytuple("RnnState", ["h", "c"])


@pytest.fixture(autouse=True, scope="module")
def single_torch_thread():
    """The tensors here are tiny: intra-op threads only add overhead (10x on a busy box)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


# ---- test doubles implementing the agent interface ------------------------------------


class LinearAgent:
    """Feed-forward PG agent double: one linear layer gives action logits and the value."""

    recurrent = False

    def __init__(self, obs_dim: int = 4, n_actions: int = 4, seed: int = 0):
        torch.manual_seed(seed)
        self.model = torch.nn.Linear(obs_dim, n_actions + 1)
        self.distribution = Categorical(n_actions)
        self.device = torch.device("cpu")
        self.calls = []  # observations seen by __call__

    def parameters(self):
        return self.model.parameters()

    def __call__(self, observation, prev_action, prev_reward):
        self.calls.append(observation.detach().clone())
        out = self.model(observation)
        return DistInfo(prob=torch.softmax(out[..., :-1], dim=-1)), out[..., -1]


class LstmAgent:
    """Recurrent PG agent double: an LSTM over [T, B] inputs, state RnnState of [N, B, H]."""

    recurrent = True

    def __init__(self, obs_dim: int = 4, n_actions: int = 3, hidden: int = 5, seed: int = 0):
        torch.manual_seed(seed)
        self.lstm = torch.nn.LSTM(obs_dim, hidden)
        self.head = torch.nn.Linear(hidden, n_actions + 1)
        self.model = torch.nn.ModuleList([self.lstm, self.head])
        self.distribution = Categorical(n_actions)
        self.device = torch.device("cpu")
        self.hidden = hidden
        self.calls = []  # (observation, init_rnn_state) seen by __call__

    def parameters(self):
        return self.model.parameters()

    def __call__(self, observation, prev_action, prev_reward, init_rnn_state):
        self.calls.append((observation.detach().clone(), init_rnn_state))
        out, (h, c) = self.lstm(observation, (init_rnn_state.h, init_rnn_state.c))
        y = self.head(out)
        dist_info = DistInfo(prob=torch.softmax(y[..., :-1], dim=-1))
        return dist_info, y[..., -1], RnnState(h=h, c=c)


def make_samples(
    agent,
    observation,
    action=None,
    reward=None,
    done=None,
    timeout=None,
    timeout_value=None,
    bootstrap_value=None,
    prev_rnn_state=None,
):
    """A Samples batch as a sampler would record it, with agent_info from ``agent``."""
    T, B = observation.shape[:2]
    prev_action = torch.zeros(T, B, dtype=torch.long)
    prev_reward = torch.zeros(T, B)
    with torch.no_grad():
        if agent.recurrent:
            state = RnnState(*(s.transpose(0, 1).contiguous() for s in prev_rnn_state[0]))
            dist_info, value, _ = agent(observation, prev_action, prev_reward, state)
            agent_info = AgentInfoRnn(dist_info, value, prev_rnn_state)
        else:
            dist_info, value = agent(observation, prev_action, prev_reward)
            agent_info = AgentInfo(dist_info, value)
    agent.calls.clear()
    action = agent.distribution.sample(dist_info) if action is None else action
    reward = torch.zeros(T, B) if reward is None else reward
    done = torch.zeros(T, B, dtype=torch.bool) if done is None else done
    timeout = torch.zeros(T, B, dtype=torch.bool) if timeout is None else timeout
    timeout_value = torch.zeros(T, B) if timeout_value is None else timeout_value
    bootstrap_value = torch.zeros(B) if bootstrap_value is None else bootstrap_value
    agent_samples = AgentSamplesBsv(
        action=action,
        prev_action=prev_action,
        agent_info=agent_info,
        bootstrap_value=bootstrap_value,
        timeout_value=timeout_value,
    )
    env_samples = EnvSamples(
        observation=observation,
        reward=reward,
        prev_reward=prev_reward,
        done=done,
        env_info=EnvInfo(timeout=timeout),
    )
    return Samples(agent=agent_samples, env=env_samples)


def bandit_samples(agent, T: int, B: int, generator: torch.Generator):
    """A contextual bandit: reward 1 for the action at the largest observation entry."""
    n_actions = agent.distribution.dim
    observation = torch.randn(T, B, n_actions, generator=generator)
    with torch.no_grad():
        dist_info, _ = agent(observation, None, None)
    action = agent.distribution.sample(dist_info)
    reward = (action == observation.argmax(-1)).float()
    done = torch.ones(T, B, dtype=torch.bool)  # every step is a whole episode
    return make_samples(agent, observation, action=action, reward=reward, done=done)


def greedy_accuracy(agent, generator: torch.Generator) -> float:
    observation = torch.randn(2000, agent.distribution.dim, generator=generator)
    with torch.no_grad():
        dist_info, _ = agent(observation, None, None)
    return (dist_info.prob.argmax(-1) == observation.argmax(-1)).float().mean().item()


# ---- returns and advantages from samples -------------------------------------------------


def reference_gae(reward, value, done, timeout, timeout_value, bootstrap, discount, lam):
    """Plain double loop: each step's next value is V(final obs) at a timeout, 0 at a done."""
    T, B = reward.shape
    advantage = torch.zeros(T, B, dtype=torch.float64)
    for b in range(B):
        for t in range(T):
            total, scale = 0.0, 1.0
            for k in range(t, T):
                if timeout[k, b]:
                    next_value = float(timeout_value[k, b])
                elif done[k, b]:
                    next_value = 0.0
                else:
                    next_value = float(bootstrap[b] if k == T - 1 else value[k + 1, b])
                delta = float(reward[k, b]) + discount * next_value - float(value[k, b])
                total += scale * delta
                scale *= discount * lam
                if done[k, b]:
                    break
            advantage[t, b] = total
    return advantage, advantage + value.double()


@pytest.mark.parametrize("gae_lambda", [1.0, 0.8])
def test_process_returns_bootstraps_truncated_episodes(gae_lambda):
    T, B = 6, 2
    agent = LinearAgent()
    gen = torch.Generator().manual_seed(1)
    observation = torch.randn(T, B, 4, generator=gen)
    reward = torch.randn(T, B, generator=gen)
    done = torch.zeros(T, B, dtype=torch.bool)
    timeout = torch.zeros(T, B, dtype=torch.bool)
    timeout_value = torch.zeros(T, B)
    done[2, 0] = timeout[2, 0] = True  # truncated by a time limit mid-batch
    timeout_value[2, 0] = 4.0
    done[4, 1] = True  # a true terminal
    bootstrap = torch.tensor([1.5, -2.0])
    samples = make_samples(
        agent, observation, reward=reward, done=done, timeout=timeout,
        timeout_value=timeout_value, bootstrap_value=bootstrap,
    )  # fmt: skip
    algo = A2C(discount=0.9, gae_lambda=gae_lambda)
    algo.initialize(agent, n_itr=1, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    return_, advantage, valid = algo.process_returns(samples)
    ref_adv, ref_ret = reference_gae(
        reward, samples.agent.agent_info.value, done, timeout, timeout_value, bootstrap, 0.9,
        gae_lambda,
    )  # fmt: skip
    torch.testing.assert_close(advantage.double(), ref_adv, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(return_.double(), ref_ret, rtol=1e-5, atol=1e-5)
    assert valid is None
    # Without the timeout bootstrap, step 2 of column 0 would have a different target.
    assert abs(float(return_[2, 0]) - float(reward[2, 0] + 0.9 * 4.0)) < 1e-5


def test_wait_reset_valid_mask_and_normalization_use_valid_entries_only():
    T, B = 5, 3
    agent = LinearAgent()
    observation = torch.randn(T, B, 4, generator=torch.Generator().manual_seed(2))
    done = torch.zeros(T, B, dtype=torch.bool)
    done[1, 0] = done[3, 1] = done[4, 1] = True
    reward = torch.arange(T * B, dtype=torch.float32).reshape(T, B)
    reward[2:, 0] = 1e4  # junk after column 0's episode ended (env idles until batch end)
    samples = make_samples(agent, observation, reward=reward, done=done)
    algo = A2C(normalize_advantage=True)
    algo.initialize(agent, n_itr=1, batch_spec=BatchSpec(T, B), mid_batch_reset=False)
    _, advantage, valid = algo.process_returns(samples)
    expected_valid = torch.ones(T, B)
    expected_valid[2:, 0] = 0
    expected_valid[4, 1] = 0
    torch.testing.assert_close(valid, expected_valid)
    chosen = advantage[valid > 0]
    assert abs(chosen.mean().item()) < 1e-5
    assert abs(chosen.std(correction=0).item() - 1) < 1e-4


def test_a2c_loss_ignores_data_after_done_with_wait_reset():
    T, B = 4, 2
    agent = LinearAgent()
    gen = torch.Generator().manual_seed(3)
    observation = torch.randn(T, B, 4, generator=gen)
    done = torch.zeros(T, B, dtype=torch.bool)
    done[1, 0] = True
    samples = make_samples(agent, observation, reward=torch.randn(T, B, generator=gen), done=done)
    algo = A2C()
    algo.initialize(agent, n_itr=1, batch_spec=BatchSpec(T, B), mid_batch_reset=False)
    loss = algo.loss(samples)[0].item()
    samples.env.reward[2:, 0] = 123.0
    samples.env.observation[2:, 0] = 7.0
    assert algo.loss(samples)[0].item() == pytest.approx(loss, rel=1e-6)
    algo.mid_batch_reset = True  # now every step counts, and the same edit changes the loss
    assert algo.loss(samples)[0].item() != pytest.approx(loss, rel=1e-3)


def test_missing_timeout_value_is_an_error():
    agent = LinearAgent()
    samples = make_samples(agent, torch.zeros(2, 1, 4))
    samples = samples._replace(agent=samples.agent._replace(timeout_value=None))
    algo = A2C()
    algo.initialize(agent, n_itr=1, batch_spec=BatchSpec(2, 1))
    with pytest.raises(ValueError, match="timeout_value"):
        algo.process_returns(samples)


# ---- A2C ---------------------------------------------------------------------------------


def test_a2c_one_step_returns_opt_info_and_lowers_the_loss():
    T, B = 8, 4
    agent = LinearAgent()
    gen = torch.Generator().manual_seed(4)
    samples = bandit_samples(agent, T, B, gen)
    algo = A2C(learning_rate=0.05)
    algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    before = [p.detach().clone() for p in agent.parameters()]
    first = algo.optimize_agent(0, samples)
    assert isinstance(first, OptInfo) and type(first).__name__ == "OptInfo"
    assert all(len(v) == 1 for v in first)
    assert algo.opt_info_fields == ("loss", "gradNorm", "entropy", "perplexity")
    assert algo.update_counter == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, agent.parameters()))
    assert 1 <= first.perplexity[0] <= 4  # between deterministic and uniform over 4 actions
    for itr in range(1, 10):
        last = algo.optimize_agent(itr, samples)
    assert last.loss[0] < first.loss[0]


@pytest.mark.parametrize("Algo", [A2C, PPO])
def test_algorithms_learn_a_contextual_bandit(Algo):
    agent = LinearAgent(seed=5)
    gen = torch.Generator().manual_seed(5)
    n_itr = 60
    kwargs = dict(learning_rate=0.05, entropy_loss_coeff=0.0)
    if Algo is PPO:  # 4 gradient steps per batch: fewer batches needed
        n_itr = 30
        kwargs.update(linear_lr_schedule=False, ratio_clip=0.2, epochs=2, minibatches=2)
    algo = Algo(**kwargs)
    algo.initialize(agent, n_itr=n_itr, batch_spec=BatchSpec(4, 16), mid_batch_reset=True)
    start = greedy_accuracy(agent, torch.Generator().manual_seed(0))
    for itr in range(n_itr):
        algo.optimize_agent(itr, bandit_samples(agent, 4, 16, gen))
    end = greedy_accuracy(agent, torch.Generator().manual_seed(0))
    assert start < 0.5
    assert end > 0.9


def test_recurrent_a2c_starts_from_the_stored_rnn_state():
    T, B, N, H = 3, 2, 1, 5
    agent = LstmAgent(hidden=H)
    observation = torch.randn(T, B, 4)
    prev_rnn_state = RnnState(h=torch.randn(T, B, N, H), c=torch.randn(T, B, N, H))
    samples = make_samples(agent, observation, prev_rnn_state=prev_rnn_state)
    algo = A2C()
    algo.initialize(agent, n_itr=1, batch_spec=BatchSpec(T, B), mid_batch_reset=False)
    algo.optimize_agent(0, samples)
    (seen_obs, seen_state), = agent.calls  # fmt: skip
    torch.testing.assert_close(seen_obs, observation)
    torch.testing.assert_close(seen_state.h, prev_rnn_state.h[0].transpose(0, 1))
    torch.testing.assert_close(seen_state.c, prev_rnn_state.c[0].transpose(0, 1))


# ---- PPO ---------------------------------------------------------------------------------


def test_ppo_feedforward_minibatches_cover_every_step_once_per_epoch():
    T, B = 5, 3  # 15 steps: not divisible by 4 minibatches, none may be dropped
    agent = LinearAgent()
    observation = torch.arange(T * B, dtype=torch.float32).reshape(T, B, 1).expand(T, B, 4)
    samples = make_samples(agent, observation.contiguous())
    algo = PPO(minibatches=4, epochs=3)
    algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    info = algo.optimize_agent(0, samples)
    assert isinstance(info, PpoOptInfo)
    assert all(len(v) == 12 for v in info)  # epochs * minibatches gradient steps
    assert algo.update_counter == 12
    assert len(agent.calls) == 12
    for epoch in range(3):
        ids = torch.cat([obs[:, 0] for obs in agent.calls[epoch * 4 : epoch * 4 + 4]])
        assert sorted(ids.long().tolist()) == list(range(T * B))


def plain_ppo_iteration(algo, agent, samples, ratio_clip):
    """PPO written step by step: index [T, B] per minibatch, every diagnostic per step,
    torch's clip_grad_norm_; returns {field: per-step values}."""
    batch, _ = algo.make_batch(samples)
    T, B = samples.env.reward.shape
    params = list(agent.parameters())
    optimizer = torch.optim.Adam(params, lr=algo.learning_rate, fused=True)
    dist, rows = agent.distribution, []
    for _ in range(algo.epochs):
        for idxs in torch.randperm(T * B).tensor_split(algo.minibatches):
            mb = batch[idxs % T, idxs // T]
            dist_info, value = agent(*mb.agent_inputs)
            log_ratio = dist.log_likelihood(mb.action, dist_info) - mb.old_log_likelihood
            ratio = torch.exp(log_ratio)
            clipped = torch.clamp(ratio, 1 - ratio_clip, 1 + ratio_clip)
            pi_loss = -valid_mean(torch.min(ratio * mb.advantage, clipped * mb.advantage), mb.valid)
            value_loss = algo.value_loss_coeff * valid_mean(0.5 * (value - mb.return_) ** 2, mb.valid)
            entropy = dist.mean_entropy(dist_info, mb.valid)
            entropy_loss = -algo.entropy_loss_coeff * entropy
            loss = pi_loss + value_loss + entropy_loss
            optimizer.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(params, algo.clip_grad_norm)
            optimizer.step()
            with torch.no_grad():
                rows.append(dict(
                    loss=loss, piLoss=pi_loss, valueLoss=value_loss, entropyLoss=entropy_loss,
                    entropy=entropy, gradNorm=grad_norm,
                    perplexity=valid_mean(dist.perplexity(dist_info), mb.valid),
                    approxKl=valid_mean(ratio - 1 - log_ratio, mb.valid),
                    ratioClipFraction=valid_mean(((ratio - 1).abs() > ratio_clip).float(), mb.valid),
                ))  # fmt: skip
    return {name: [row[name].item() for row in rows] for name in rows[0]}


@pytest.mark.parametrize("entropy_loss_coeff", [0.0, 0.01])
@pytest.mark.parametrize("mid_batch_reset", [True, False])
def test_ppo_equals_the_plain_stepwise_algorithm(entropy_loss_coeff, mid_batch_reset):
    """Flattened minibatches, batched diagnostics, the skipped zero-weight entropy term and
    the foreach grad clip change nothing: same parameters bit for bit, same diagnostics."""
    T, B = 5, 3  # 15 steps in 4 minibatches: unequal sizes
    done = torch.zeros(T, B, dtype=torch.bool)
    done[1, 0] = done[3, 2] = True  # wait-reset: a valid mask with zeros
    results = []
    for run in range(2):
        agent = LinearAgent()
        samples = make_samples(agent, torch.randn(T, B, 4, generator=torch.Generator().manual_seed(3)),
                               reward=torch.randn(T, B, generator=torch.Generator().manual_seed(4)),
                               done=done)  # fmt: skip
        algo = PPO(minibatches=4, epochs=3, learning_rate=0.01,
                   entropy_loss_coeff=entropy_loss_coeff)  # fmt: skip
        algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B),
                        mid_batch_reset=mid_batch_reset)  # fmt: skip
        torch.manual_seed(5)
        if run == 0:
            info = algo.optimize_agent(0, samples)._asdict()
        else:
            info = plain_ppo_iteration(algo, agent, samples, algo.ratio_clip)
        results.append((info, [p.detach().clone() for p in agent.parameters()]))
    (info, params), (expected, expected_params) = results
    assert all(torch.equal(a, b) for a, b in zip(params, expected_params))
    for name, values in expected.items():
        assert info[name] == pytest.approx(values, rel=1e-5, abs=1e-7), name


def test_ppo_single_minibatch_is_the_unshuffled_batch():
    """minibatches=1: every epoch steps on the whole batch in its stored order, which is
    the shuffled plain algorithm's update up to the order of summation."""
    T, B = 5, 3
    results = []
    for run in range(2):
        agent = LinearAgent()
        samples = make_samples(agent, torch.randn(T, B, 4, generator=torch.Generator().manual_seed(3)),
                               reward=torch.randn(T, B, generator=torch.Generator().manual_seed(4)))
        algo = PPO(minibatches=1, epochs=3, learning_rate=0.01)
        algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
        if run == 0:
            info = algo.optimize_agent(0, samples)._asdict()
            # Flat order t + T * b, as make_batch lays the batch out: no gather.
            assert all(torch.equal(obs, agent.calls[0]) for obs in agent.calls)
        else:
            info = plain_ppo_iteration(algo, agent, samples, algo.ratio_clip)
        results.append((info, [p.detach().clone() for p in agent.parameters()]))
    (info, params), (expected, expected_params) = results
    for param, expected_param in zip(params, expected_params):
        torch.testing.assert_close(param, expected_param, rtol=1e-5, atol=1e-6)
    assert info["loss"] == pytest.approx(expected["loss"], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("entropy_loss_coeff", [0.0, 0.01])
def test_a2c_equals_the_plain_algorithm(entropy_loss_coeff):
    """A2C (RMSprop, so the multi-tensor update make_optimizer picks) matches the textbook
    step with torch's per-parameter RMSprop and clip_grad_norm_, bit for bit."""
    T, B = 5, 3
    kwargs = dict(entropy_loss_coeff=entropy_loss_coeff, OptimCls=torch.optim.RMSprop,
                  optim_kwargs=dict(alpha=0.99, eps=1e-5), learning_rate=0.01)  # fmt: skip
    results = []
    for run in range(2):
        agent = LinearAgent()
        samples = bandit_samples(agent, T, B, torch.Generator().manual_seed(13))
        algo = A2C(**kwargs)
        algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
        if run == 0:
            info = [algo.optimize_agent(itr, samples) for itr in range(3)]
        else:
            params = list(agent.parameters())
            optimizer = torch.optim.RMSprop(params, lr=0.01, alpha=0.99, eps=1e-5, foreach=False)
            info = []
            for _ in range(3):
                return_, advantage, _ = algo.process_returns(samples)
                dist_info, value = agent(samples.env.observation, None, None)
                dist = agent.distribution
                pi_loss = -(dist.log_likelihood(samples.agent.action, dist_info) * advantage).mean()
                value_loss = algo.value_loss_coeff * (0.5 * (value - return_) ** 2).mean()
                entropy = dist.mean_entropy(dist_info)
                loss = pi_loss + value_loss - entropy_loss_coeff * entropy
                optimizer.zero_grad()
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(params, algo.clip_grad_norm)
                optimizer.step()
                perplexity = dist.mean_perplexity(dist_info)
                info.append(OptInfo([loss.item()], [grad_norm.item()], [entropy.item()],
                                    [perplexity.item()]))  # fmt: skip
        results.append((info, [p.detach().clone() for p in agent.parameters()]))
    (info, params), (expected, expected_params) = results
    assert all(torch.equal(a, b) for a, b in zip(params, expected_params))
    for got, want in zip(info, expected):
        for name in OptInfo._fields:
            assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-6), name


def test_make_optimizer_picks_fused_or_foreach_unless_told():
    params = [torch.nn.Parameter(torch.zeros(2))]
    assert make_optimizer(torch.optim.Adam, params, 0.1).defaults["fused"] is True
    assert make_optimizer(torch.optim.RMSprop, params, 0.1).defaults["foreach"] is True
    assert make_optimizer(torch.optim.SGD, params, 0.1).defaults["foreach"] is True
    chosen = make_optimizer(torch.optim.RMSprop, params, 0.1, dict(foreach=False))
    assert chosen.defaults["foreach"] is False
    assert not make_optimizer(torch.optim.Adam, params, 0.1, dict(foreach=True)).defaults["fused"]


@pytest.mark.parametrize("max_norm", [0.5, 100.0, None])
def test_clip_grad_norm_is_torchs_clip_bit_for_bit(max_norm):
    g = torch.Generator().manual_seed(0)
    shapes = [(64, 4), (64,), (2, 64), (2,), (1, 64)]
    params = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
    reference = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
    for p, r in zip(params, reference):
        p.grad = torch.randn(p.shape, generator=g)
        r.grad = p.grad.clone()
    params.append(torch.nn.Parameter(torch.zeros(3)))  # no gradient: skipped
    norm = clip_grad_norm(params, max_norm)
    expected = torch.nn.utils.clip_grad_norm_(reference, float("inf") if max_norm is None else max_norm)
    assert torch.equal(norm, expected)
    assert all(torch.equal(p.grad, r.grad) for p, r in zip(params, reference))


def test_segment_valid_mean_matches_valid_mean_per_segment():
    g = torch.Generator().manual_seed(0)
    values = torch.randn(3, 15, generator=g)
    valid = (torch.rand(15, generator=g) < 0.7).float()
    valid[4:8] = 0  # one segment entirely invalid: mean 0, as valid_mean gives
    for sizes in ([5, 5, 5], [4, 4, 4, 3]):
        for mask in (None, valid):
            means = segment_valid_mean(values, sizes, mask)
            for k, mean in enumerate(means):
                expected = [
                    valid_mean(v, None if mask is None else m)
                    for v, m in zip(values[k].split(sizes), valid.split(sizes))
                ]
                torch.testing.assert_close(mean, torch.stack(expected))


def test_ppo_recurrent_minibatches_keep_sequences_whole():
    T, B, N, H = 4, 6, 1, 5
    agent = LstmAgent(hidden=H)
    t_ids = torch.arange(T, dtype=torch.float32).reshape(T, 1).expand(T, B)
    b_ids = torch.arange(B, dtype=torch.float32).reshape(1, B).expand(T, B)
    observation = torch.stack([b_ids, t_ids, torch.zeros(T, B), torch.zeros(T, B)], dim=-1)
    # Stored state of column b at time t is 100 * b + t, in every unit.
    state = (100 * b_ids + t_ids).reshape(T, B, 1, 1).expand(T, B, N, H).contiguous()
    samples = make_samples(agent, observation, prev_rnn_state=RnnState(h=state, c=-state))
    algo = PPO(minibatches=3, epochs=2)
    algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B), mid_batch_reset=False)
    info = algo.optimize_agent(0, samples)
    assert len(info.loss) == 6
    columns_per_epoch = [[], []]
    for i, (obs, init_state) in enumerate(agent.calls):
        assert obs.shape == (T, B // 3, 4)  # whole sequences of B / minibatches columns
        columns = obs[0, :, 0]
        assert torch.equal(obs[:, :, 0], columns.expand(T, -1))  # one column per sequence
        assert torch.equal(obs[:, :, 1], t_ids[:, : B // 3])  # every time step, in order
        assert init_state.h.shape == (N, B // 3, H)
        # The initial state is the one stored at t=0 for the same columns.
        torch.testing.assert_close(init_state.h[0, :, 0], 100 * columns)
        torch.testing.assert_close(init_state.c[0, :, 0], -100 * columns)
        columns_per_epoch[i // 3] += columns.long().tolist()
    assert [sorted(c) for c in columns_per_epoch] == [list(range(B))] * 2


def test_ppo_recurrent_single_minibatch_is_every_column_in_order():
    T, B, N, H = 4, 6, 1, 5
    agent = LstmAgent(hidden=H)
    b_ids = torch.arange(B, dtype=torch.float32).reshape(1, B).expand(T, B)
    observation = torch.stack([b_ids] + [torch.zeros(T, B)] * 3, dim=-1)
    state = (100 * b_ids).reshape(T, B, 1, 1).expand(T, B, N, H).contiguous()
    samples = make_samples(agent, observation, prev_rnn_state=RnnState(h=state, c=-state))
    algo = PPO(minibatches=1, epochs=2)
    algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B), mid_batch_reset=False)
    assert len(algo.optimize_agent(0, samples).loss) == 2
    for obs, init_state in agent.calls:
        assert torch.equal(obs[:, :, 0], b_ids)
        assert init_state.h.shape == (N, B, H)
        torch.testing.assert_close(init_state.h[0, :, 0], 100 * b_ids[0])
        torch.testing.assert_close(init_state.c[0, :, 0], -100 * b_ids[0])


def test_ppo_recurrent_minibatches_must_divide_batch_B():
    algo = PPO(minibatches=4)
    with pytest.raises(ValueError, match=r"minibatches=4.*batch_B=6.*\[1, 2, 3, 6\]"):
        algo.initialize(LstmAgent(), n_itr=1, batch_spec=BatchSpec(5, 6))


def test_ppo_feedforward_minibatches_cannot_exceed_batch_size():
    with pytest.raises(ValueError, match="minibatches=8.*1 to 6"):
        PPO(minibatches=8).initialize(LinearAgent(), n_itr=1, batch_spec=BatchSpec(3, 2))


def test_ppo_ratio_clip_fraction_starts_at_zero_and_grows():
    T, B = 16, 8
    agent = LinearAgent()
    samples = bandit_samples(agent, T, B, torch.Generator().manual_seed(6))
    algo = PPO(learning_rate=0.1, ratio_clip=0.05, epochs=4, minibatches=4)
    algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    info = algo.optimize_agent(0, samples)
    # The first minibatch is evaluated before any update: the ratio is exactly 1.
    assert info.ratioClipFraction[0] == 0.0
    assert info.approxKl[0] == pytest.approx(0.0, abs=1e-7)
    assert max(info.ratioClipFraction[4:]) > 0.1
    assert max(info.approxKl) > 0
    assert all(0 <= f <= 1 for f in info.ratioClipFraction)


def ppo_batch_with_ratio(agent, ratio: float, advantage: float):
    """A PPO minibatch whose old log-likelihood makes every probability ratio ``ratio``."""
    T, B = 3, 2
    samples = make_samples(agent, torch.randn(T, B, 4, generator=torch.Generator().manual_seed(7)))
    algo = PPO(value_loss_coeff=0.0, entropy_loss_coeff=0.0, ratio_clip=0.2)
    algo.initialize(agent, n_itr=1, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    batch, _ = algo.make_batch(samples)
    batch = batch._replace(
        old_log_likelihood=batch.old_log_likelihood - torch.log(torch.tensor(ratio)),
        advantage=torch.full((T, B), advantage),
    )
    return algo, batch


@pytest.mark.parametrize(
    "ratio, advantage, clipped",
    [(1.5, 1.0, True), (0.5, -1.0, True), (1.5, -1.0, False), (0.5, 1.0, False), (1.1, 1.0, False)],
)
def test_ppo_clipped_objective_has_no_gradient_beyond_the_clip(ratio, advantage, clipped):
    agent = LinearAgent()
    algo, batch = ppo_batch_with_ratio(agent, ratio, advantage)
    terms = algo.loss(batch, None, ratio_clip=0.2)
    agent.model.zero_grad()
    terms["piLoss"].backward()
    grad = torch.cat([p.grad.reshape(-1) for p in agent.parameters()])
    diagnostics = algo.step_diagnostics([terms], [batch.valid], ratio_clip=0.2)
    assert diagnostics["ratioClipFraction"].tolist() == [1.0 if abs(ratio - 1) > 0.2 else 0.0]
    if clipped:
        assert torch.all(grad == 0)
        bound = 1.2 if ratio > 1 else 0.8
        assert terms["piLoss"].item() == pytest.approx(-bound * advantage, rel=1e-5)
    else:
        assert grad.abs().sum() > 0
        assert terms["piLoss"].item() == pytest.approx(-ratio * advantage, rel=1e-5)


def test_ppo_value_clipping_takes_the_larger_error():
    agent = LinearAgent()
    algo, batch = ppo_batch_with_ratio(agent, 1.0, 1.0)
    algo.value_loss_coeff = 1.0
    algo.clip_vf_loss, algo.vf_clip = True, 0.01
    with torch.no_grad():
        value = agent(*batch.agent_inputs)[1]
    old_value = value - 1.0  # the new value moved by +1 from the sampled one
    return_ = value + 0.5  # target lies beyond the new value
    batch = batch._replace(old_value=old_value, return_=return_)
    terms = algo.loss(batch, None, ratio_clip=0.2)
    clipped = old_value + 0.01  # clipped prediction: error (return_ - clipped) = 1.49 > 0.5
    expected = 0.5 * ((return_ - clipped) ** 2).mean()
    assert terms["valueLoss"].item() == pytest.approx(expected.item(), rel=1e-5)
    algo.clip_vf_loss = False
    assert algo.loss(batch, None, 0.2)["valueLoss"].item() == pytest.approx(0.5 * 0.25, rel=1e-5)


def test_ppo_linear_schedule_anneals_lr_and_ratio_clip_to_zero():
    T, B, n_itr = 4, 2, 4
    agent = LinearAgent()
    samples = bandit_samples(agent, T, B, torch.Generator().manual_seed(8))
    algo = PPO(learning_rate=0.01, ratio_clip=0.2, minibatches=2, epochs=1)
    algo.initialize(agent, n_itr=n_itr, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    for itr in range(n_itr):
        info = algo.optimize_agent(itr, samples)
        factor = (n_itr - itr) / n_itr
        assert info.learningRate == pytest.approx([0.01 * factor] * 2)
        assert info.ratioClip == pytest.approx([0.2 * factor] * 2)
    assert algo.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    assert algo.current_ratio_clip == pytest.approx(0.0, abs=1e-12)


def test_ppo_schedule_without_clip_annealing_keeps_the_clip():
    """``anneal_ratio_clip=False`` (CleanRL's): the rate falls to 0, the clip stays."""
    T, B, n_itr = 4, 2, 3
    agent = LinearAgent()
    samples = bandit_samples(agent, T, B, torch.Generator().manual_seed(10))
    algo = PPO(learning_rate=0.01, ratio_clip=0.2, minibatches=2, epochs=1,
               anneal_ratio_clip=False)
    algo.initialize(agent, n_itr=n_itr, batch_spec=BatchSpec(T, B), mid_batch_reset=True)
    for itr in range(n_itr):
        info = algo.optimize_agent(itr, samples)
        assert info.learningRate == pytest.approx([0.01 * (n_itr - itr) / n_itr] * 2)
        assert info.ratioClip == pytest.approx([0.2] * 2)
    assert algo.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    assert algo.current_ratio_clip == 0.2


def test_ppo_without_schedule_keeps_lr_and_clip():
    agent = LinearAgent()
    samples = bandit_samples(agent, 4, 2, torch.Generator().manual_seed(9))
    algo = PPO(learning_rate=0.01, linear_lr_schedule=False, minibatches=1, epochs=1)
    algo.initialize(agent, n_itr=2, batch_spec=BatchSpec(4, 2), mid_batch_reset=True)
    for itr in range(3):
        info = algo.optimize_agent(itr, samples)
    assert info.learningRate == [0.01] and info.ratioClip == [0.1]
    assert "param_groups" in algo.optim_state_dict()  # a bare optimizer state dict


def test_ppo_target_kl_stops_the_epochs_early():
    agent = LinearAgent()
    samples = bandit_samples(agent, 16, 8, torch.Generator().manual_seed(10))
    algo = PPO(learning_rate=0.2, epochs=10, minibatches=4, target_kl=1e-3)
    algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(16, 8), mid_batch_reset=True)
    info = algo.optimize_agent(0, samples)
    assert 1 <= len(info.loss) < 40
    assert algo.update_counter == len(info.loss)
    assert algo.lr_scheduler.last_epoch == 1  # the schedule still advances


def test_ppo_optimizer_state_round_trip_resumes_exactly():
    T, B = 4, 4
    spec = BatchSpec(T, B)
    agent_a = LinearAgent()
    samples = bandit_samples(agent_a, T, B, torch.Generator().manual_seed(11))
    algo_a = PPO(learning_rate=0.01)
    algo_a.initialize(agent_a, n_itr=10, batch_spec=spec, mid_batch_reset=True)
    for itr in range(3):
        algo_a.optimize_agent(itr, samples)
    optim_state = copy.deepcopy(algo_a.optim_state_dict())
    model_state = copy.deepcopy(agent_a.model.state_dict())

    def resumed(initial_optim_state_dict):
        agent = LinearAgent()
        agent.model.load_state_dict(model_state)
        algo = PPO(learning_rate=0.01, initial_optim_state_dict=initial_optim_state_dict)
        algo.initialize(agent, n_itr=10, batch_spec=spec, mid_batch_reset=True)
        return agent, algo

    agent_b, algo_b = resumed(optim_state)
    agent_c, algo_c = resumed(None)  # fresh optimizer: must differ, or the test proves nothing
    infos = []
    for algo in (algo_a, algo_b, algo_c):
        torch.manual_seed(123)  # same minibatch shuffle for all three
        infos.append(algo.optimize_agent(3, samples))
    assert infos[0] == infos[1]
    for p_a, p_b in zip(agent_a.parameters(), agent_b.parameters()):
        assert torch.equal(p_a, p_b)
    assert infos[2].learningRate != infos[0].learningRate
    assert any(not torch.equal(a, c) for a, c in zip(agent_a.parameters(), agent_c.parameters()))


def test_algorithm_state_dict_round_trip_includes_update_counter():
    agent = LinearAgent()
    samples = bandit_samples(agent, 4, 2, torch.Generator().manual_seed(12))
    algo = A2C()
    algo.initialize(agent, n_itr=5, batch_spec=BatchSpec(4, 2), mid_batch_reset=True)
    algo.optimize_agent(0, samples)
    state = copy.deepcopy(algo.state_dict())
    other = A2C()
    other.initialize(LinearAgent(), n_itr=5, batch_spec=BatchSpec(4, 2))
    other.load_state_dict(state)
    assert other.update_counter == 1
    assert other.optimizer.state_dict()["state"].keys() == state["optim"]["state"].keys()
    with pytest.raises(KeyError, match="update_counter"):
        other.load_state_dict({"optim": state["optim"]})


@pytest.mark.parametrize("Algo", [A2C, PPO])
def test_nan_loss_names_the_term_and_itr(Algo):
    agent = LinearAgent()
    reward = torch.zeros(4, 2)
    reward[1, 1] = float("nan")
    samples = make_samples(agent, torch.randn(4, 2, 4), reward=reward)
    algo = Algo()
    algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(4, 2), mid_batch_reset=True)
    with pytest.raises(FloatingPointError, match=r"'(pi|value)_loss' is nan at itr 7"):
        algo.optimize_agent(7, samples)


@pytest.mark.parametrize(
    "Algo, kwargs, match",
    [
        (A2C, dict(discount=1.5), "discount=1.5"),
        (A2C, dict(gae_lambda=-0.1), "gae_lambda=-0.1"),
        (A2C, dict(learning_rate=0), "learning_rate=0"),
        (PPO, dict(minibatches=0), "minibatches=0"),
        (PPO, dict(epochs=2.5), "epochs=2.5"),
        (PPO, dict(ratio_clip=0), "ratio_clip=0"),
        (PPO, dict(target_kl=-1.0), "target_kl=-1.0"),
    ],
)
def test_bad_keywords_are_rejected_by_name(Algo, kwargs, match):
    with pytest.raises(ValueError, match=match):
        Algo(**kwargs)


def test_defaults_match_the_api_contract():
    a2c, ppo = A2C(), PPO()
    expected = dict(
        discount=0.99, learning_rate=0.001, value_loss_coeff=0.5, entropy_loss_coeff=0.01,
        OptimCls=torch.optim.Adam, optim_kwargs={}, clip_grad_norm=1.0,
        initial_optim_state_dict=None, gae_lambda=1, normalize_advantage=False,
    )  # fmt: skip
    for key, value in expected.items():
        assert getattr(a2c, key) == value, key
        if key != "value_loss_coeff":
            assert getattr(ppo, key) == value, key
    assert ppo.value_loss_coeff == 1.0
    assert (ppo.minibatches, ppo.epochs, ppo.ratio_clip, ppo.linear_lr_schedule) == (4, 4, 0.1, True)
    assert (ppo.clip_vf_loss, ppo.vf_clip, ppo.target_kl) == (False, None, None)
    assert A2C.bootstrap_value and PPO.bootstrap_value


@pytest.mark.parametrize("Algo", [A2C, PPO])
def test_normalize_returns_denormalizes_values_and_normalizes_targets(Algo):
    """``normalize_returns``: the sampled values (and bootstrap and timeout values) are
    normalised returns, scaled back with the statistics before this batch for GAE; the
    value target is the return normalised by the statistics with this batch's valid
    returns folded in (plain references: the GAE loop and numpy's mean and std)."""
    T, B = 5, 3
    agent = LinearAgent()
    gen = torch.Generator().manual_seed(3)
    observation = torch.randn(T, B, 4, generator=gen)
    reward = 10 + 5 * torch.randn(T, B, generator=gen)  # returns far from unit scale
    done = torch.zeros(T, B, dtype=torch.bool)
    timeout = torch.zeros(T, B, dtype=torch.bool)
    timeout_value = torch.zeros(T, B)
    done[1, 0] = timeout[1, 0] = True
    timeout_value[1, 0] = 0.7
    done[3, 1] = True
    bootstrap = torch.tensor([0.3, -0.2, 1.1])
    samples = make_samples(agent, observation, reward=reward, done=done, timeout=timeout,
                           timeout_value=timeout_value, bootstrap_value=bootstrap)
    algo = Algo(discount=0.9, gae_lambda=0.8, normalize_returns=True)
    algo.initialize(agent, n_itr=3, batch_spec=BatchSpec(T, B), mid_batch_reset=False)
    earlier = 50 + 20 * torch.randn(40, generator=gen)  # returns of earlier batches
    algo.return_rms.update(earlier)
    mean, std = earlier.double().mean(), earlier.double().std(correction=0)

    return_, advantage, valid = algo.process_returns(samples)

    value = samples.agent.agent_info.value
    ref_adv, ref_ret = reference_gae(
        reward, value.double() * std + mean, done, timeout, timeout_value.double() * std + mean,
        bootstrap.double() * std + mean, 0.9, 0.8)
    torch.testing.assert_close(advantage.double(), ref_adv, rtol=1e-5, atol=1e-4)
    all_returns = torch.cat([earlier.double(), ref_ret[valid > 0]])
    new_mean, new_std = all_returns.mean(), all_returns.std(correction=0)
    torch.testing.assert_close(return_.double(), (ref_ret - new_mean) / new_std,
                               rtol=1e-5, atol=1e-5)
    assert algo.return_rms.count.item() == 40 + int(valid.sum())
    # The samples themselves are not changed (the sampler's buffers are reused).
    torch.testing.assert_close(samples.agent.agent_info.value, value)


def test_normalize_returns_statistics_are_part_of_the_algorithm_state():
    agent = LinearAgent()
    samples = bandit_samples(agent, 4, 2, torch.Generator().manual_seed(13))
    algo = PPO(normalize_returns=True)
    algo.initialize(agent, n_itr=5, batch_spec=BatchSpec(4, 2), mid_batch_reset=True)
    algo.optimize_agent(0, samples)
    state = copy.deepcopy(algo.state_dict())
    assert state["return_rms"]["count"].item() == 8
    other = PPO(normalize_returns=True)
    other.initialize(LinearAgent(), n_itr=5, batch_spec=BatchSpec(4, 2))
    other.load_state_dict(state)
    for key, value in algo.return_rms.state_dict().items():
        assert torch.equal(other.return_rms.state_dict()[key], value)
    with pytest.raises(KeyError, match="return_rms"):
        other.load_state_dict({k: v for k, v in state.items() if k != "return_rms"})
    plain = PPO()
    plain.initialize(LinearAgent(), n_itr=5, batch_spec=BatchSpec(4, 2))
    assert plain.return_rms is None and "return_rms" not in plain.state_dict()
