"""APPO: PPO's clipped surrogate against the behaviour policy, with V-trace targets."""

from __future__ import annotations

import copy
import inspect
import multiprocessing as mp

import numpy as np
import pytest
import torch
from test_impala import cartpole_batches, single_torch_thread  # noqa: F401 (autouse)

from rlpyt.agents.pg.categorical import CategoricalPgAgent, RecurrentCategoricalPgAgent
from rlpyt.algos.pg.appo import APPO, AppoOptInfo
from rlpyt.algos.pg.ppo import PPO, flatten_steps
from rlpyt.utils.buffer import buffer_method


def test_defaults_are_ppos_and_impalas():
    """PPO's defaults for the surrogate and its epochs, Impala's for V-trace and the FIFO."""
    defaults = {k: p.default for k, p in inspect.signature(APPO).parameters.items()}
    ppo = {k: p.default for k, p in inspect.signature(PPO).parameters.items()}
    for name in ("discount", "learning_rate", "value_loss_coeff", "entropy_loss_coeff",
                 "clip_grad_norm", "epochs", "minibatches", "ratio_clip", "clip_vf_loss",
                 "vf_clip", "normalize_advantage", "linear_lr_schedule"):
        assert defaults[name] == ppo[name], name
    assert defaults["rho_bar"] == defaults["c_bar"] == defaults["vtrace_lambda"] == 1.0
    assert defaults["fifo_size"] == 4 and defaults["updates_per_sync"] == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(epochs=0), "epochs=0 must be an integer >= 1"),
    (dict(minibatches=1.5), "minibatches=1.5 must be an integer >= 1"),
    (dict(ratio_clip=0), r"ratio_clip=0 must lie in \(0"),
    (dict(vf_clip=-1), r"vf_clip=-1 must lie in \(0"),
    (dict(rho_bar=0), r"rho_bar=0 must lie in \(0"),
    (dict(fifo_size=1), "fifo_size=1 must be an integer >= 2"),
    (dict(pg_rho_bar=-1), r"pg_rho_bar=-1 must lie in \(0"),
    (dict(proximal_policy="mu"), r"proximal_policy='mu' must be one of \['learner', "
                                 r"'behaviour'\]"),
])
def test_bad_keywords_are_rejected_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        APPO(**kwargs)


def test_minibatches_must_split_a_recurrent_agents_columns():
    agent = RecurrentCategoricalPgAgent()
    _, examples, batch_spec = cartpole_batches(agent, 1, B=3)
    with pytest.raises(ValueError, match=r"minibatches=2 must divide batch_B=3.*\[1, 3\]"):
        APPO(minibatches=2).async_initialize(agent, 10, batch_spec, False, examples)


def _plain_loss(proximal_agent, agent, batch, algo: APPO) -> float:
    """The APPO loss of ``agent`` on a whole batch, entry by entry: V-trace by its
    backward recursion with ``proximal_agent``'s values and ratios (the learner at the
    batch's start), then the clipped surrogate, value and entropy terms as plain sums."""
    T, B = batch.reward.shape
    inputs = (batch.observation, batch.prev_action, batch.prev_reward)
    with torch.no_grad():
        dist = agent.distribution
        prox_info, prox_value = proximal_agent(*inputs)
        log_prox = dist.log_likelihood(batch.action, prox_info)
        log_mu = dist.log_likelihood(batch.action, batch.behaviour_dist_info)
        dist_info, value = agent(*inputs)
        log_pi = dist.log_likelihood(batch.action, dist_info)
        entropy = dist.entropy(dist_info)
    gamma, lam = algo.discount, algo.vtrace_lambda
    learner_anchor = algo.proximal_policy == "learner"
    loss = 0.0
    for b in range(B):
        ratio_mu = [float(torch.exp(log_prox[t, b] - log_mu[t, b])) for t in range(T)]
        rho = [min(algo.rho_bar, r) for r in ratio_mu]
        c = [lam * min(algo.c_bar, r) for r in ratio_mu]
        v = [float(prox_value[t, b]) for t in range(T)] + [float(batch.bootstrap_value[b])]
        reward = [float(batch.reward[t, b]) for t in range(T)]
        for t in range(T):  # CartPole-v1 truncates at 500 steps: not within these batches
            assert not bool(batch.timeout[t, b])
        not_done = [0.0 if bool(batch.done[t, b]) else 1.0 for t in range(T)]
        vs = [0.0] * (T + 1)
        vs[T] = v[T]
        acc = 0.0
        for t in reversed(range(T)):
            delta = rho[t] * (reward[t] + gamma * not_done[t] * v[t + 1] - v[t])
            acc = delta + gamma * not_done[t] * c[t] * acc
            vs[t] = v[t] + acc
        for t in range(T):
            advantage = reward[t] + gamma * not_done[t] * vs[t + 1] - v[t]
            anchor = log_prox[t, b] if learner_anchor else log_mu[t, b]
            weight = min(algo.pg_rho_bar or algo.rho_bar, ratio_mu[t]) if learner_anchor else 1
            ratio = float(torch.exp(log_pi[t, b] - anchor))
            clipped = min(max(ratio, 1 - algo.ratio_clip), 1 + algo.ratio_clip)
            pi_term = -weight * min(ratio * advantage, clipped * advantage)
            value_term = algo.value_loss_coeff * 0.5 * (float(value[t, b]) - vs[t]) ** 2
            entropy_term = -algo.entropy_loss_coeff * float(entropy[t, b])
            loss += (pi_term + value_term + entropy_term) / (T * B)
    return loss


@pytest.mark.parametrize("proximal_policy, pg_rho_bar", [
    ("learner", None), ("learner", 1.2), ("behaviour", None)])
def test_the_loss_matches_a_plain_loop_off_policy(proximal_policy, pg_rho_bar):
    """A behaviour policy other than the learner's (rho != 1, some truncated), and a
    learner that has moved since the batch's start (ratios against the anchor away from
    1, some clipped): the loss against ``_plain_loss``."""
    torch.manual_seed(0)
    agent = CategoricalPgAgent()
    (samples,), examples, batch_spec = cartpole_batches(agent, 1)
    prob = samples.agent.agent_info.dist_info.prob
    prob[..., 0], prob[..., 1] = 0.8, 0.2  # the sampler "acted" with another policy
    algo = APPO(epochs=1, minibatches=1, rho_bar=1.5, c_bar=1.0, vtrace_lambda=0.9,
                ratio_clip=0.2, proximal_policy=proximal_policy, pg_rho_bar=pg_rho_bar)
    algo.initialize(agent, 10, batch_spec, mid_batch_reset=True, examples=examples)
    batch = algo.samples_to_buffer(samples)
    proximal_agent = copy.deepcopy(agent)
    data, _, rho_info = algo.minibatch_data(batch)
    with torch.no_grad():  # the learner's later parameters, within and beyond the clip
        for p in agent.parameters():
            p.add_(0.2 * torch.randn_like(p))
    terms = algo.loss(flatten_steps(data))
    expected = _plain_loss(proximal_agent, agent, batch, algo)
    assert terms["loss"].item() == pytest.approx(expected, rel=1e-5)
    assert 0 < float(terms["ratioClipFraction"]) <= 1
    assert 0 < float(rho_info["rhoClipFraction"]) < 1
    assert float(rho_info["rhoMean"]) != pytest.approx(1.0)


def test_a_lagging_learner_keeps_its_trust_region_under_the_learner_anchor():
    """The learner's own step starts at ratio 1 (no sample clipped) however far the
    behaviour policy lags, where the behaviour anchor starts near or past the clip."""
    agent = CategoricalPgAgent()
    (samples,), examples, batch_spec = cartpole_batches(agent, 1)
    prob = samples.agent.agent_info.dist_info.prob
    prob[..., 0], prob[..., 1] = 0.8, 0.2
    fractions = {}
    for anchor in APPO.proximal_policies:
        algo = APPO(epochs=1, minibatches=1, ratio_clip=0.1, proximal_policy=anchor)
        algo.initialize(copy.deepcopy(agent), 10, batch_spec, mid_batch_reset=True,
                        examples=examples)
        fractions[anchor] = algo.optimize_agent(0, samples).ratioClipFraction[0]
    assert fractions["learner"] == 0.0 and fractions["behaviour"] > 0.5


@pytest.mark.parametrize("epochs, minibatches", [(1, 1), (2, 3)])
def test_on_policy_appo_takes_ppos_steps(epochs, minibatches):
    """Behaviour = learner and lambda = 1: the V-trace targets are the discounted
    returns and the advantages GAE(1)'s, so APPO takes PPO's steps (same shuffles),
    up to the float rounding of recomputing the values in one batched pass."""
    agent = CategoricalPgAgent()
    (samples,), examples, batch_spec = cartpole_batches(agent, 1, T=12, B=4)
    twin = copy.deepcopy(agent)
    common = dict(epochs=epochs, minibatches=minibatches, normalize_advantage=True,
                  learning_rate=0.01)
    appo = APPO(**common)
    ppo = PPO(gae_lambda=1.0, anneal_ratio_clip=False, **common)
    appo.initialize(agent, 10, batch_spec, mid_batch_reset=True, examples=examples)
    ppo.initialize(twin, 10, batch_spec, mid_batch_reset=True, examples=examples)
    torch.manual_seed(3)
    info = appo.optimize_agent(0, samples)
    torch.manual_seed(3)
    ppo_info = ppo.optimize_agent(0, samples)
    assert isinstance(info, AppoOptInfo)
    assert len(info.loss) == epochs * minibatches == appo.update_counter
    assert appo.batches_learned == 1 and info.batchLag == [0.0]
    assert info.rhoMean[0] == pytest.approx(1.0, abs=1e-5) and info.rhoClipFraction == [0.0]
    assert info.loss == pytest.approx(ppo_info.loss, rel=1e-4, abs=1e-6)
    for p, q in zip(agent.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)


def test_the_schedule_steps_once_per_batch():
    agent = CategoricalPgAgent()
    (samples,), examples, batch_spec = cartpole_batches(agent, 1)
    algo = APPO(learning_rate=0.01, epochs=2, minibatches=2)
    algo.initialize(agent, 4, batch_spec, mid_batch_reset=True, examples=examples)
    rates = []
    for itr in range(4):
        rates.append(algo.optimize_agent(itr, samples).learningRate[0])
    assert rates == pytest.approx([0.01, 0.0075, 0.005, 0.0025])
    assert algo.update_counter == 16 and algo.batches_learned == 4


def test_recurrent_agent_replays_whole_columns_from_the_stored_state():
    agent = RecurrentCategoricalPgAgent()
    batches, examples, batch_spec = cartpole_batches(agent, 2, B=4, wait_reset=True)
    algo = APPO(minibatches=2)
    algo.initialize(agent, 10, batch_spec, mid_batch_reset=False, examples=examples)
    batch = algo.samples_to_buffer(batches[1])  # starts from a nonzero recurrent state
    data, init_rnn_state, _ = algo.minibatch_data(batch)
    zeroed = batch._replace(init_rnn_state=buffer_method(batch.init_rnn_state, "mul", 0))
    zero_data, _, _ = algo.minibatch_data(zeroed)
    assert not torch.equal(data.old_value, zero_data.old_value)  # the state enters
    minibatch, rnn_state = algo.select_minibatch(data, init_rnn_state, torch.tensor([1, 3]))
    assert minibatch.action.shape == (batch_spec.T, 2)
    info = algo.optimize_agent(1, batches[1])
    assert np.isfinite(info.loss).all() and algo.update_counter == 8


# ---- asynchronous mode, driven by hand ---------------------------------------------


def _copier(algo, batches, marks):
    for samples, mark in zip(batches, marks):
        samples.env.reward[:] = mark
        algo.fifo.append_samples(algo.samples_to_buffer(samples))


def test_async_mode_learns_each_fifo_batch_once_and_publishes_per_batch():
    agent = CategoricalPgAgent()
    batches, examples, batch_spec = cartpole_batches(agent, 4)
    algo = APPO(fifo_size=3, epochs=2, minibatches=2)
    fifo = algo.async_initialize(agent, 100, batch_spec, mid_batch_reset=True,
                                 examples=examples)
    assert algo.async_max_ahead == 2 and algo.batch_size == batch_spec.size
    published = []
    agent.send_shared_memory = lambda: published.append(algo.batches_learned)
    algo.optim_initialize(rank=0)
    marks = [10.0, 20.0, 30.0, 40.0]
    consumed = []
    for first, count in ((0, 2), (2, 2)):
        child = mp.get_context("fork").Process(
            target=_copier, args=(algo, batches[first:first + count],
                                  marks[first:first + count]))
        child.start()
        child.join(timeout=60)
        assert child.exitcode == 0
        while algo.fifo_position < fifo.n_appended:
            consumed.append(fifo.batch(algo.fifo_position).reward.mean().item())
            info = algo.optimize_agent(algo.fifo_position)
    assert consumed == marks
    assert published == [1, 2, 3, 4] and algo.update_counter == 16
    # Batches 2 and 3 were copied after 2 batches were learned; batch 3 was learned
    # after 3: a lag of one batch.
    assert fifo.batch(3).policy_version.item() == 2 and info.batchLag == [1.0]


def test_a_resume_goes_on_from_the_batches_learned():
    agent = CategoricalPgAgent()
    batches, examples, batch_spec = cartpole_batches(agent, 2)
    algo = APPO(fifo_size=2, epochs=1, minibatches=2)
    fifo = algo.async_initialize(agent, 100, batch_spec, True, examples)
    agent.send_shared_memory = lambda: None
    algo.optim_initialize()
    for i, samples in enumerate(batches):
        fifo.append_samples(algo.samples_to_buffer(samples))
        algo.optimize_agent(i)
    state = copy.deepcopy(algo.state_dict())
    assert state["batches_learned"] == 2 and state["update_counter"] == 4

    twin_agent = copy.deepcopy(agent)
    resumed = APPO(fifo_size=2, epochs=1, minibatches=2)
    resumed_fifo = resumed.async_initialize(twin_agent, 100, batch_spec, True, examples)
    resumed_fifo.restart_at(3)  # batch 2 was sampled but not learned before the save
    twin_agent.send_shared_memory = lambda: None
    resumed.optim_initialize()
    resumed.load_state_dict(state)
    assert resumed.batches_learned == 2 and resumed.fifo_position == 3
    with pytest.raises(KeyError, match="batches_learned"):
        resumed.load_state_dict({k: v for k, v in state.items() if k != "batches_learned"})


def test_async_mode_with_a_recurrent_agent_and_wait_reset_batches():
    agent = RecurrentCategoricalPgAgent()
    batches, examples, batch_spec = cartpole_batches(agent, 2, B=4, wait_reset=True)
    algo = APPO(fifo_size=2, minibatches=2)
    fifo = algo.async_initialize(agent, 10, batch_spec, mid_batch_reset=False,
                                 examples=examples)
    agent.send_shared_memory = lambda: None
    algo.optim_initialize()
    for i, samples in enumerate(batches):
        fifo.append_samples(algo.samples_to_buffer(samples))
        info = algo.optimize_agent(i)
        assert np.isfinite(info.loss).all() and info.batchLag == [0.0]
    assert algo.batches_learned == 2


# ---- whole runs through the command line -------------------------------------------


def _rows(run_dir):
    import csv

    with open(f"{run_dir}/progress.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("sampler_type", ["serial", "cpu", "gpu", "alternating"])
def test_rlpyt_train_async_appo_with_each_async_sampler(sampler_type, tmp_path):
    """``rlpyt train --runner async --algo appo`` with every asynchronous sampler of the
    CPU (the GPU ones act on the CPU here); each batch is learned once."""
    from rlpyt.cli import main

    assert main(["train", "--algo", "appo", "--runner", "async", "--sampler-type",
                 sampler_type, "--workers", "2", "--n-steps", "2048", "--log-dir",
                 str(tmp_path), "--runner.log_interval_steps", "1024",
                 "--sampler.eval_n_envs", "0"]) == 0
    rows = _rows(tmp_path / "run_0")
    assert [int(r["CumSteps"]) for r in rows][-1] == 2048
    # Batches of 32 x 8, each 4 epochs of 4 minibatches.
    assert int(float(rows[-1]["CumUpdates"])) == 2048 // 256 * 16
    assert all(np.isfinite(float(r["LossAverage"])) for r in rows[1:])


def test_async_appo_resumes_and_trains_on(tmp_path):
    """The FIFO is not saved: a resumed run skips the batches sampled but not learned
    before the checkpoint, and its parameter versions go on from the batches learned."""
    import glob

    from rlpyt.cli import main

    assert main(["train", "--algo", "appo", "--runner", "async", "--n-steps", "2048",
                 "--log-dir", str(tmp_path), "--runner.log_interval_steps", "1024",
                 "--sampler.eval_n_envs", "0"]) == 0
    (run_dir,) = glob.glob(str(tmp_path / "run_*"))
    first = _rows(run_dir)
    assert main(["train", "--resume", run_dir, "--n-steps", "4096"]) == 0
    rows = _rows(run_dir)
    assert [int(r["CumSteps"]) for r in rows] == [1024, 2048, 3072, 4096]
    assert rows[:2] == first
    updates = [int(float(r["CumUpdates"])) for r in rows[1:]]
    assert updates[2] > updates[1] > updates[0] > 0, updates
