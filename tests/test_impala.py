"""Impala (V-trace actor-critic) and the BatchFifo that feeds it in asynchronous runs."""

from __future__ import annotations

import copy
import inspect
import multiprocessing as mp

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.agents.pg.categorical import CategoricalPgAgent, RecurrentCategoricalPgAgent
from rlpyt.algos import losses
from rlpyt.algos.pg.a2c import A2C
from rlpyt.algos.pg.impala import Impala, ImpalaBatch, ImpalaOptInfo
from rlpyt.envs.gym import make
from rlpyt.replays.fifo import BatchFifo
from rlpyt.samplers.parallel.cpu.collectors import CpuWaitResetCollector
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.buffer import buffer_method
from rlpyt.utils.collections import namedarraytuple

Slot = namedarraytuple("Slot", ["x", "y", "missing"])


@pytest.fixture(autouse=True, scope="module")
def single_torch_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def cartpole_batches(agent, n: int, T: int = 8, B: int = 3, wait_reset: bool = False,
                     seed: int = 0):
    """``n`` sampler batches (deep copies) from CartPole-v1, with the sampler's examples
    and its batch spec; the agent is left initialized."""
    kwargs = dict(CollectorCls=CpuWaitResetCollector) if wait_reset else {}
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=T,
                            batch_B=B, max_decorrelation_steps=0, **kwargs)
    examples = sampler.initialize(agent=agent, affinity={}, seed=seed, bootstrap_value=True)
    try:
        batches = []
        for itr in range(n):
            agent.sample_mode(itr)
            samples, _ = sampler.obtain_samples(itr)
            batches.append(buffer_method(samples, "clone"))
        agent.train_mode(n)
    finally:
        sampler.shutdown()
    return batches, examples, sampler.batch_spec


# ---- BatchFifo -------------------------------------------------------------------------


def slot(i: int) -> Slot:
    return Slot(x=np.full((2, 3), i, np.float32), y=np.array([i, -i], np.int64), missing=None)


@settings(max_examples=30, deadline=None)
@given(capacity=st.integers(1, 5), n=st.integers(0, 13))
def test_fifo_holds_the_last_capacity_batches_in_order(capacity, n):
    fifo = BatchFifo(slot(0), capacity, share_memory=False)
    for i in range(n):
        assert fifo.append_samples(slot(i)) == i
    assert fifo.n_appended == n
    for i in range(n):
        if i >= n - capacity:
            batch = fifo.batch(i)
            assert torch.equal(batch.x, torch.full((2, 3), float(i)))
            assert batch.y.tolist() == [i, -i] and batch.missing is None
        else:
            with pytest.raises(IndexError, match=f"index={i} is not held"):
                fifo.batch(i)
    with pytest.raises(IndexError):
        fifo.batch(n)  # not appended yet


def test_fifo_batches_are_views_of_the_slots():
    fifo = BatchFifo(slot(0), 2, share_memory=False)
    fifo.append_samples(slot(7))
    view = fifo.batch(0)
    fifo.append_samples(slot(8))
    fifo.append_samples(slot(9))  # wraps around into slot 0
    assert view.x[0, 0].item() == 9


def test_fifo_restarted_at_n_numbers_on_from_n_and_holds_nothing_before():
    fifo = BatchFifo(slot(0), 3, share_memory=False)
    for i in range(5):
        fifo.append_samples(slot(i))
    fifo.restart_at(7)  # A resumed run: the sampler goes on from batch 7.
    for i in range(3):
        with pytest.raises(IndexError, match=r"batches 7 to 6"):
            fifo.batch(4 + i)  # Stale slots are never served.
    assert fifo.append_samples(slot(70)) == 7
    assert fifo.batch(7).y.tolist() == [70, -70]
    with pytest.raises(IndexError, match="index=6 is not held"):
        fifo.batch(6)
    with pytest.raises(ValueError, match="n=-1"):
        fifo.restart_at(-1)


def test_fifo_rejects_a_bad_capacity():
    with pytest.raises(ValueError, match="capacity=0"):
        BatchFifo(slot(0), 0)


def _append_from_child(fifo, first, count):
    for i in range(first, first + count):
        fifo.append_samples(slot(i))


def test_fifo_appends_of_a_forked_process_reach_the_parent():
    fifo = BatchFifo(slot(0), 3)
    child = mp.get_context("fork").Process(target=_append_from_child, args=(fifo, 0, 5))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert fifo.n_appended == 5
    assert [fifo.batch(i).y[0].item() for i in (2, 3, 4)] == [2, 3, 4]


# ---- Impala under a synchronous runner ------------------------------------------------


def test_defaults_match_the_api_contract():
    defaults = {k: p.default for k, p in inspect.signature(Impala.__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    a2c = {k: p.default for k, p in inspect.signature(A2C.__init__).parameters.items()
           if p.default is not inspect.Parameter.empty}
    assert defaults["rho_bar"] == 1.0 and defaults["c_bar"] == 1.0
    for name in ("discount", "learning_rate", "value_loss_coeff", "entropy_loss_coeff",
                 "OptimCls", "optim_kwargs", "clip_grad_norm", "initial_optim_state_dict"):
        assert defaults[name] == a2c[name], name


@pytest.mark.parametrize("kwargs, match", [
    (dict(rho_bar=0), "rho_bar=0"), (dict(c_bar=-1.0), "c_bar=-1.0"),
    (dict(vtrace_lambda=1.5), "vtrace_lambda=1.5"), (dict(discount=2), "discount=2"),
    (dict(fifo_size=1), "fifo_size=1"), (dict(updates_per_sync=0), "updates_per_sync=0"),
    (dict(reward_scale=0), "reward_scale=0"), (dict(reward_scale=float("inf")), "inf"),
])
def test_bad_keywords_are_rejected_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Impala(**kwargs)


def random_batch(T: int, B: int, seed: int) -> tuple:
    """An ``ImpalaBatch`` of random rewards, ends and time-limit truncations (the fields
    ``vtrace_targets`` reads), with random values and log-ratios."""
    g = torch.Generator().manual_seed(seed)
    done = torch.rand(T, B, generator=g) < 0.2
    timeout = done & (torch.rand(T, B, generator=g) < 0.5)
    batch = ImpalaBatch(
        observation=None, prev_action=None, prev_reward=None, action=None,
        reward=torch.randn(T, B, generator=g), done=done.float(), timeout=timeout.float(),
        behaviour_dist_info=None, bootstrap_value=torch.randn(B, generator=g),
        timeout_value=torch.randn(T, B, generator=g), init_rnn_state=None,
        policy_version=None)
    return batch, torch.randn(T, B, generator=g), 0.3 * torch.randn(T, B, generator=g)


@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 12), B=st.integers(1, 4), seed=st.integers(0, 10_000),
       scale=st.floats(0.01, 10.0))
def test_reward_scale_puts_targets_and_advantages_in_the_critics_units(T, B, seed, scale):
    """``reward_scale=c``: the targets are V-trace's on ``c * reward`` with the critic's
    own bootstrap values; a critic whose values are ``c`` times another's then gets
    exactly ``c`` times its targets and advantages (the units are consistent)."""
    batch, value, log_rho = random_batch(T, B, seed)
    scaled, plain = Impala(reward_scale=scale), Impala()
    scaled.mid_batch_reset = plain.mid_batch_reset = True  # as initialize() sets it
    vs, adv, _ = scaled.vtrace_targets(batch, value, log_rho)
    ref_vs, ref_adv, _ = plain.vtrace_targets(batch._replace(reward=batch.reward * scale),
                                              value, log_rho)
    torch.testing.assert_close(vs, ref_vs)
    torch.testing.assert_close(adv, ref_adv)
    units = batch._replace(bootstrap_value=batch.bootstrap_value * scale,
                           timeout_value=batch.timeout_value * scale)
    vs_c, adv_c, _ = scaled.vtrace_targets(units, value * scale, log_rho)
    vs_1, adv_1, _ = plain.vtrace_targets(batch, value, log_rho)
    torch.testing.assert_close(vs_c, scale * vs_1, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(adv_c, scale * adv_1, rtol=1e-5, atol=1e-5)


def test_on_policy_impala_takes_a2cs_step():
    """Behaviour = learner: every rho is 1 and the V-trace targets with lambda = 1 are the
    discounted returns, so the first update is A2C's with gae_lambda = 1 and the same
    advantage normalisation (up to the float rounding of recomputing the values in one
    batched forward pass)."""
    agent = CategoricalPgAgent()
    (samples,), examples, batch_spec = cartpole_batches(agent, 1)
    twin = copy.deepcopy(agent)
    impala = Impala(normalize_advantage=True)
    a2c = A2C(gae_lambda=1, normalize_advantage=True)
    impala.initialize(agent, 10, batch_spec, mid_batch_reset=True, examples=examples)
    a2c.initialize(twin, 10, batch_spec, mid_batch_reset=True, examples=examples)
    info = impala.optimize_agent(0, samples)
    a2c_info = a2c.optimize_agent(0, samples)
    assert isinstance(info, ImpalaOptInfo)
    assert info.rhoMean[0] == pytest.approx(1.0, abs=1e-5)
    assert info.rhoClipFraction == [0.0] and info.cClipFraction == [0.0]
    assert info.batchLag == [0.0]
    assert info.loss[0] == pytest.approx(a2c_info.loss[0], rel=1e-4)
    for p, q in zip(agent.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)


def test_off_policy_batches_are_reweighted_and_truncated():
    """A behaviour policy other than the learner's: rho != 1, and the V-trace targets are
    those of the truncated ratios (checked against rlpyt.algos.losses.vtrace)."""
    agent = CategoricalPgAgent()
    (samples,), examples, batch_spec = cartpole_batches(agent, 1)
    prob = samples.agent.agent_info.dist_info.prob
    prob[..., 0], prob[..., 1] = 0.8, 0.2  # the sampler "acted" with another policy
    algo = Impala(rho_bar=2.0, c_bar=1.0)
    algo.initialize(agent, 10, batch_spec, mid_batch_reset=True, examples=examples)
    batch = algo.samples_to_buffer(samples)
    terms = algo.loss(batch)
    with torch.no_grad():
        dist_info, value = agent(batch.observation, batch.prev_action, batch.prev_reward)
        log_rho = (agent.distribution.log_likelihood(batch.action, dist_info)
                   - agent.distribution.log_likelihood(batch.action, batch.behaviour_dist_info))
    rho = torch.exp(log_rho)
    assert terms["rhoMean"].item() == pytest.approx(rho.mean().item(), rel=1e-6)
    assert terms["rhoClipFraction"].item() == pytest.approx((rho > 2.0).float().mean().item())
    assert terms["cClipFraction"].item() == pytest.approx((rho > 1.0).float().mean().item())
    assert 0 < terms["cClipFraction"].item() < 1
    reward = losses.timeout_bootstrapped_reward(batch.reward, batch.timeout,
                                                batch.timeout_value, algo.discount)
    vs, _ = losses.vtrace(reward, value, batch.done, batch.bootstrap_value, algo.discount,
                          log_rho, rho_bar=2.0, c_bar=1.0)
    expected = algo.value_loss_coeff * losses.value_loss(value, vs)
    assert terms["valueLoss"].item() == pytest.approx(expected.item(), rel=1e-5)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_linear_lr_schedule_reaches_zero_at_the_last_iteration(asynchronous):
    """One schedule step per gradient step, from ``learning_rate`` to 0 after ``n_itr``;
    a resumed optimizer continues the schedule; ``linear_lr_schedule=False`` keeps it."""
    agent = CategoricalPgAgent()
    (samples,), examples, batch_spec = cartpole_batches(agent, 1)
    n_itr = 4
    algo = Impala(learning_rate=0.01)
    if asynchronous:
        algo.async_initialize(agent, n_itr, batch_spec, mid_batch_reset=True,
                              examples=examples)
        agent.send_shared_memory = lambda: None
        algo.optim_initialize()
    else:
        algo.initialize(agent, n_itr, batch_spec, mid_batch_reset=True, examples=examples)
    rates = []
    for itr in range(n_itr):
        rates.append(algo.optimizer.param_groups[0]["lr"])
        if asynchronous:
            algo.fifo.append_samples(algo.samples_to_buffer(samples))
            algo.optimize_agent(itr)
        else:
            algo.optimize_agent(itr, samples)
        if itr == 1:
            state = copy.deepcopy(algo.optim_state_dict())
    assert rates == pytest.approx([0.01, 0.0075, 0.005, 0.0025])
    assert algo.optimizer.param_groups[0]["lr"] == 0.0
    resumed = Impala(learning_rate=0.01, initial_optim_state_dict=state)
    twin = CategoricalPgAgent()
    cartpole_batches(twin, 1)  # initializes the twin's model on the same spaces
    resumed.initialize(twin, n_itr, batch_spec, mid_batch_reset=True, examples=examples)
    assert resumed.optimizer.param_groups[0]["lr"] == pytest.approx(0.005)

    constant = Impala(learning_rate=0.01, linear_lr_schedule=False)
    constant.initialize(agent, n_itr, batch_spec, mid_batch_reset=True, examples=examples)
    for itr in range(2):
        constant.optimize_agent(itr, samples)
    assert constant.lr_scheduler is None
    assert constant.optimizer.param_groups[0]["lr"] == 0.01


def test_recurrent_agent_starts_from_the_stored_rnn_state():
    agent = RecurrentCategoricalPgAgent()
    batches, examples, batch_spec = cartpole_batches(agent, 2, wait_reset=True)
    samples = batches[1]  # the second batch starts from a nonzero recurrent state
    algo = Impala()
    algo.initialize(agent, 10, batch_spec, mid_batch_reset=False, examples=examples)
    batch = algo.samples_to_buffer(samples)
    assert batch.init_rnn_state is not None
    with torch.no_grad():
        loss = algo.loss(batch)["loss"].item()
        zeroed = batch._replace(init_rnn_state=buffer_method(batch.init_rnn_state, "mul", 0))
        zero_loss = algo.loss(zeroed)["loss"].item()
    assert loss != zero_loss  # the stored state enters the forward pass
    info = algo.optimize_agent(0, samples)
    assert np.isfinite(info.loss[0]) and algo.update_counter == 1


# ---- Impala's asynchronous mode, driven by hand ---------------------------------------


def _copier(algo, batches, marks):
    """What the runner's memory copier does, with each batch's reward marked by its number."""
    for samples, mark in zip(batches, marks):
        samples.env.reward[:] = mark
        algo.fifo.append_samples(algo.samples_to_buffer(samples))


@pytest.mark.parametrize("updates_per_sync", [1, 2])
def test_async_mode_consumes_fifo_batches_in_order_and_publishes(updates_per_sync):
    agent = CategoricalPgAgent()
    batches, examples, batch_spec = cartpole_batches(agent, 5)
    algo = Impala(fifo_size=3, updates_per_sync=updates_per_sync)
    fifo = algo.async_initialize(agent, 100, batch_spec, mid_batch_reset=True,
                                 examples=examples)
    assert algo.async_mode and algo.async_max_ahead == 2
    assert algo.replay_ratio == 1 and algo.batch_size == batch_spec.size
    assert algo.min_itr_learn == 0
    published = []
    agent.send_shared_memory = lambda: published.append(algo.update_counter)
    algo.optim_initialize(rank=0)
    with pytest.raises(IndexError, match="index=0 is not held"):
        algo.optimize_agent(0)  # nothing appended yet: a clear error, not stale data

    consumed, fork = [], mp.get_context("fork")
    marks = [10.0 * (i + 1) for i in range(5)]
    for first, count in ((0, 3), (3, 2)):  # the copier never gets a full FIFO ahead
        child = fork.Process(target=_copier,
                             args=(algo, batches[first:first + count], marks[first:first + count]))
        child.start()
        child.join(timeout=60)
        assert child.exitcode == 0 and fifo.n_appended == first + count
        while algo.update_counter < fifo.n_appended:
            consumed.append(fifo.batch(algo.update_counter).reward.mean().item())
            info = algo.optimize_agent(algo.update_counter, sampler_itr=fifo.n_appended)
            assert np.isfinite(info.loss[0])
    assert consumed == marks
    assert algo.update_counter == 5
    assert published == [n for n in range(1, 6) if n % updates_per_sync == 0]
    # The copier records the last published version with each batch; the lag is what
    # the learner had done since: batches 3 and 4 were copied after 3 updates.
    version = 3 if updates_per_sync == 1 else 2
    assert fifo.batch(4).policy_version.item() == version
    assert info.batchLag[0] == 4 - version


def test_batch_lag_counts_from_the_version_the_sampler_acted_with():
    """The runner's copier passes each batch's sampling version (``append_to_buffer``):
    the lag is the learner's steps since then, not since the batch was copied."""
    from rlpyt.runners.async_rl import append_to_buffer

    agent = CategoricalPgAgent()
    batches, examples, batch_spec = cartpole_batches(agent, 3)
    algo = Impala(fifo_size=4)
    fifo = algo.async_initialize(agent, 100, batch_spec, mid_batch_reset=True,
                                 examples=examples)
    agent.send_shared_memory = lambda: None
    algo.optim_initialize(rank=0)
    for samples in batches:  # all three sampled with version 0, as a sampler running ahead
        append_to_buffer(algo, fifo, samples, param_version=0)
    lags = [algo.optimize_agent(n).batchLag[0] for n in range(3)]
    assert lags == [0.0, 1.0, 2.0]


def test_async_initialize_needs_examples():
    with pytest.raises(ValueError, match="examples=None"):
        Impala().async_initialize(CategoricalPgAgent(), 10, (4, 2), True, None)


def test_async_mode_with_a_recurrent_agent_and_wait_reset_batches():
    agent = RecurrentCategoricalPgAgent()
    batches, examples, batch_spec = cartpole_batches(agent, 2, wait_reset=True)
    algo = Impala(fifo_size=2)
    fifo = algo.async_initialize(agent, 10, batch_spec, mid_batch_reset=False, examples=examples)
    agent.send_shared_memory = lambda: None
    algo.optim_initialize()
    for i, samples in enumerate(batches):
        fifo.append_samples(algo.samples_to_buffer(samples))
        stored = fifo.batch(i).init_rnn_state
        expected = samples.agent.agent_info.prev_rnn_state[0]
        assert all(torch.equal(a, b) for a, b in zip(stored, expected))
        info = algo.optimize_agent(i)
        assert np.isfinite(info.loss[0]) and info.batchLag == [0.0]
    assert algo.update_counter == 2
