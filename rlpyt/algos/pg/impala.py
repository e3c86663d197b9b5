"""IMPALA: off-policy actor-critic with V-trace targets, for lagging behaviour policies."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
import torch

from rlpyt.agents.base import AgentInputs
from rlpyt.algos import losses
from rlpyt.algos.pg.base import PolicyGradientAlgo, check_in_range
from rlpyt.replays.fifo import BatchFifo
from rlpyt.utils.buffer import buffer_from_example, buffer_to, np_mp_array
from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.quick_args import save__init__args
from rlpyt.utils.tensor import valid_mean

__all__ = ["Impala", "ImpalaBatch", "ImpalaOptInfo"]

ImpalaOptInfo = namedtuple(
    "ImpalaOptInfo",
    ["loss", "gradNorm", "entropy", "perplexity", "piLoss", "valueLoss", "entropyLoss",
     "rhoMean", "rhoClipFraction", "cClipFraction", "batchLag"],
)
# What the learner needs of a [T, B] sampler batch (the FIFO's slot layout):
# behaviour_dist_info is mu(.|x) as the sampler recorded it; init_rnn_state [B, ...]
# is the recurrent state at the batch's first step (None for feed-forward agents);
# timeout / timeout_value are None when the env reports no time-limit truncations;
# policy_version is the learner's update count last published when it was stored.
ImpalaBatch = namedarraytuple(
    "ImpalaBatch",
    ["observation", "prev_action", "prev_reward", "action", "reward", "done", "timeout",
     "behaviour_dist_info", "bootstrap_value", "timeout_value", "init_rnn_state",
     "policy_version"],
)


class Impala(PolicyGradientAlgo):
    """IMPALA's learner (Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with
    Importance Weighted Actor-Learner Architectures"): an actor-critic that learns from
    trajectories of a behaviour policy ``mu`` lagging behind the learner's ``pi``,
    correcting with V-trace.

    Each ``optimize_agent`` takes one gradient step on one ``[T, B]`` batch::

        rho = pi(a|x) / mu(a|x)              (mu: the sampler's recorded dist_info)
        v_s, A_s = vtrace(reward_scale * r, V(x), done, V(x_T), gamma, log rho,
                          rho_bar, c_bar)
        loss = -mean(log pi(a|x) * A) + value_loss_coeff * mean(0.5 (V(x) - v_s)^2)
               - entropy_loss_coeff * mean(H(pi(.|x)))

    with ``A_s = min(pg_rho_bar, rho_s) (r_s + gamma v_{s+1} - V(x_s))`` (paper eq. 4)
    and ``v_s`` the V-trace target of eq. 1, both treated as constants.  ``V(x)`` is the
    learner's value, recomputed on the batch; the values after the batch end
    (``bootstrap_value``) and at time-limit truncations (``timeout_value``) are the ones
    the sampler recorded, i.e. under the behaviour parameters (exact under
    ``MinibatchRl``, where behaviour and learner coincide and every rho is 1, so the
    update is A2C's with lambda = 1).  Truncated episodes bootstrap from
    V(final observation) while ``done`` cuts the traces, as in A2C.

    Under an asynchronous runner the sampler writes into a FIFO of ``fifo_size``
    batches (``async_initialize``); each ``optimize_agent`` consumes the oldest batch
    and publishes the parameters every ``updates_per_sync`` steps.

    Args:
        discount: reward discount gamma (default 0.99).
        learning_rate: optimizer step size (default 0.001, as A2C; the paper's 6e-4 with
            RMSprop was tuned for Atari batches of 32 x 20).
        value_loss_coeff: weight of the value regression ("baseline cost"; default 0.5,
            A2C's and the paper's).
        entropy_loss_coeff: weight of the entropy bonus (default 0.01, A2C's; the paper
            tunes it between 5e-5 and 0.01).
        OptimCls: torch optimizer class (default ``torch.optim.Adam``, as A2C).
        optim_kwargs: extra keyword arguments for ``OptimCls`` (default None: none).
        clip_grad_norm: maximum global gradient norm; None disables clipping (default 1.,
            A2C's; the paper clips at 40 with sums instead of means over the batch).
        initial_optim_state_dict: optimizer state to load at initialization (default None).
        rho_bar: truncation of the importance weight in the TD errors; it sets the fixed
            point V-trace converges to (the value of a policy between mu and pi; pi
            itself as rho_bar -> infinity).  None or ``inf``: untruncated (default 1.,
            the paper's).
        c_bar: truncation of the trace coefficients ``c``; it sets how fast the targets
            contract (variance), not their fixed point.  None or ``inf``: untruncated
            (default 1., the paper's; the paper assumes ``rho_bar >= c_bar``).
        pg_rho_bar: truncation of the importance weight of the policy-gradient
            advantage; None uses ``rho_bar`` (default None, as in the paper).
        vtrace_lambda: extra trace decay multiplying every ``c`` (the paper's Remark 2,
            lambda in [0, 1]; 1 is plain V-trace, on-policy it is GAE's lambda)
            (default 1.).
        normalize_advantage: scale the policy-gradient advantages to mean 0, std 1 over
            the valid entries of each batch (default False, as A2C's: the public API keeps
            A2C's defaults where the paper does not argue otherwise, and it does not use
            it.  On CartPole it helps a solved policy stay solved together with
            ``linear_lr_schedule`` (docs/notes/impala_cartpole.md has the runs); the
            ``impala`` CLI preset sets it).
        fifo_size: batches held by the FIFO between samplers and learner in
            asynchronous runs; the sampler runs at most ``fifo_size - 1`` batches ahead
            (``async_max_ahead``), which bounds the policy lag.  At least 2: one slot the
            learner reads while the sampler fills another (default 4).
        updates_per_sync: in asynchronous runs, gradient steps between publishing new
            parameters to the samplers (default 1: after every step).
        reward_scale: factor on every reward in the V-trace targets, so the critic
            learns values in scaled units (``bootstrap_value`` and ``timeout_value``, the
            critic's own outputs, are already in them) and the advantages scale with it
            (default 1.: rewards as the env gives them).  Adam moves each weight by about
            the learning rate per step, so a critic whose targets are of order
            ``r / (1 - discount)`` = 100 (CartPole) cannot reach them in a few thousand
            updates; its errors then dominate the advantages and, through the global
            gradient clip, scale the policy's steps.  On CartPole 0.1 brings the targets
            to order 10, which the critic reaches, and a solved policy stays solved
            (docs/notes/impala_cartpole.md has the runs; the ``impala`` CLI preset sets
            it).  The paper clips Atari rewards to [-1, 1].
        linear_lr_schedule: anneal the learning rate linearly from ``learning_rate`` to 0
            over the run's iterations (one gradient step each), as the paper's learner
            does; its state is part of ``optim_state_dict()``, so a resumed run continues
            it.  With a constant rate a solved policy keeps taking full-size steps
            after its failures (the only signal) have stopped, and falls back late in
            the run (default True; see docs/notes/impala_cartpole.md).
    """

    opt_info_fields = tuple(ImpalaOptInfo._fields)
    weight_pg_advantage = True  # the policy gradient's importance weight is in A
    stores_param_version = True  # the async copier passes each batch's sampling version
    replay_ratio = 1  # one gradient step per sampler batch
    min_itr_learn = 0
    async_mode = False
    _fifo_skip = 0  # Batches a resume skipped (fifo_position).

    def __init__(
        self,
        discount: float = 0.99,
        learning_rate: float = 0.001,
        value_loss_coeff: float = 0.5,
        entropy_loss_coeff: float = 0.01,
        OptimCls: type[torch.optim.Optimizer] = torch.optim.Adam,
        optim_kwargs: dict | None = None,
        clip_grad_norm: float | None = 1.0,
        initial_optim_state_dict: dict | None = None,
        rho_bar: float | None = 1.0,
        c_bar: float | None = 1.0,
        pg_rho_bar: float | None = None,
        vtrace_lambda: float = 1.0,
        normalize_advantage: bool = False,
        fifo_size: int = 4,
        updates_per_sync: int = 1,
        linear_lr_schedule: bool = True,
        reward_scale: float = 1.0,
    ):
        save__init__args(locals())
        self.optim_kwargs = dict(optim_kwargs or {})
        self.check_args()

    def check_args(self) -> None:
        check_in_range("Impala", "discount", self.discount, 0, 1)
        check_in_range("Impala", "vtrace_lambda", self.vtrace_lambda, 0, 1)
        check_in_range("Impala", "learning_rate", self.learning_rate, 0, math.inf, low_open=True)
        if not 0 < self.reward_scale < math.inf:
            raise ValueError(f"Impala: reward_scale={self.reward_scale!r} must be a finite "
                             f"number > 0")
        for name in ("clip_grad_norm", "rho_bar", "c_bar", "pg_rho_bar"):
            if getattr(self, name) is not None:
                check_in_range("Impala", name, getattr(self, name), 0, math.inf, low_open=True)
        for name, low in (("fifo_size", 2), ("updates_per_sync", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < low:
                raise ValueError(f"Impala: {name}={value!r} must be an integer >= {low}")

    # ---- asynchronous runs: the FIFO between samplers and learner ----------------------
    def async_initialize(self, agent, sampler_n_itr: int, batch_spec, mid_batch_reset: bool,
                         examples, world_size: int = 1) -> BatchFifo:
        """Allocate the shared-memory FIFO (before the sampler processes fork); returns it.

        The runner's memory copier appends ``samples_to_buffer(samples, param_version)``
        of every sampler batch to it (``param_version``: the parameters the sampler acted
        with), and calls ``optim_initialize`` in the learner process after.
        """
        if examples is None:
            raise ValueError("Impala.async_initialize needs the sampler's examples to "
                             "allocate its FIFO of batches (got examples=None)")
        self.agent = agent
        self.n_itr = int(sampler_n_itr)
        self.batch_spec = batch_spec
        self.mid_batch_reset = mid_batch_reset
        self.world_size = world_size
        self._batch_size = batch_spec.size
        self._published_version = np_mp_array((), np.int64)  # read by the copier process
        self.fifo = BatchFifo(self.example_batch(examples, batch_spec), self.fifo_size)
        self.async_mode = True
        return self.fifo

    @property
    def learned_version(self) -> int:
        """The learner's parameter version: batches learned from (one gradient step
        each here, so ``update_counter``).  Published parameters and the batches
        stamped with them count in it."""
        return self.update_counter

    @property
    def fifo_position(self) -> int | None:
        """The FIFO number of the next batch to learn from (asynchronous mode; None
        otherwise): ``learned_version``, plus the batches a resume skipped (sampled but
        not consumed before the checkpoint; the FIFO is not saved)."""
        return self.learned_version + self._fifo_skip if self.async_mode else None

    def load_state_dict(self, state_dict: dict) -> None:
        """As ``RlAlgorithm``; in asynchronous mode the FIFO's numbering (``restart_at``,
        set by the runner from the sampler's batch count) goes on past the batches lost
        with the checkpoint."""
        super().load_state_dict(state_dict)
        if self.async_mode:
            self._fifo_skip = max(0, self.fifo.first - self.learned_version)

    @property
    def async_max_ahead(self) -> int:
        """Batches the sampler may run ahead of ``learned_version``: one slot of the FIFO
        stays with the batch the learner is reading."""
        return self.fifo_size - 1

    def example_batch(self, examples: dict, batch_spec) -> ImpalaBatch:
        """A zero ``ImpalaBatch`` of the sampler's shapes, from one step's ``examples``."""
        T, B = batch_spec
        agent_info, env_info = examples["agent_info"], examples["env_info"]
        has_timeout = getattr(env_info, "timeout", None) is not None
        rnn_state = getattr(agent_info, "prev_rnn_state", None)

        def steps(example):
            return buffer_from_example(example, (T, B))

        return ImpalaBatch(
            observation=steps(examples["observation"]),
            prev_action=steps(examples["action"]),
            prev_reward=steps(examples["reward"]),
            action=steps(examples["action"]),
            reward=steps(examples["reward"]),
            done=steps(examples["done"]),
            timeout=steps(env_info.timeout) if has_timeout else None,
            behaviour_dist_info=steps(agent_info.dist_info),
            bootstrap_value=buffer_from_example(np.float32(0), (B,)),
            timeout_value=steps(np.float32(0)) if has_timeout else None,
            init_rnn_state=None if rnn_state is None else buffer_from_example(rnn_state, (B,)),
            policy_version=np.zeros((), np.int64),
        )

    def samples_to_buffer(self, samples, param_version: int | None = None) -> ImpalaBatch:
        """The fields of a sampler batch the learner uses (views, no copies).

        ``param_version``: the parameter version the sampler acted with (the
        asynchronous runner's copier passes it); None or negative stamps the batch with
        the version last published (asynchronous: a lower bound on the lag) or, in
        synchronous runs, the current ``learned_version``.
        """
        agent = samples.agent
        bootstrap_value = getattr(agent, "bootstrap_value", None)
        if bootstrap_value is None:
            raise ValueError(
                "Impala: samples.agent has no bootstrap_value; the sampler must record "
                "AgentSamplesBsv (it does when algo.bootstrap_value is True)"
            )
        if not hasattr(agent.agent_info, "dist_info"):
            raise ValueError(
                f"Impala: samples.agent.agent_info ({type(agent.agent_info).__name__}) has no "
                f"dist_info; Impala needs the behaviour policy's distribution, which the "
                f"policy-gradient agents (rlpyt.agents.pg) record"
            )
        timeout = getattr(samples.env.env_info, "timeout", None)
        rnn_state = getattr(agent.agent_info, "prev_rnn_state", None)
        if param_version is not None and param_version >= 0:
            version = int(param_version)
        elif self.async_mode:
            version = int(self._published_version[()])
        else:
            version = self.learned_version
        return ImpalaBatch(
            observation=samples.env.observation,
            prev_action=agent.prev_action,
            prev_reward=samples.env.prev_reward,
            action=agent.action,
            reward=samples.env.reward,
            done=samples.env.done,
            timeout=timeout,
            behaviour_dist_info=agent.agent_info.dist_info,
            bootstrap_value=bootstrap_value,
            timeout_value=None if timeout is None else agent.timeout_value,
            init_rnn_state=None if rnn_state is None else rnn_state[0],
            policy_version=np.int64(version),
        )

    # ---- one gradient step -------------------------------------------------------------
    def optimize_agent(self, itr: int, samples=None, sampler_itr: int | None = None):
        """One gradient step: on ``samples`` (synchronous runners) or, in asynchronous
        runs, on the oldest unconsumed FIFO batch (number ``fifo_position``).

        Returns ``ImpalaOptInfo`` of one-element lists.
        """
        batch = self.next_batch(samples)
        policy_lag = self.learned_version - int(batch.policy_version)
        terms = self.loss(buffer_to(batch, self.agent.device))
        if not math.isfinite(terms["loss"].item()):
            self.check_finite(itr, pi_loss=terms["piLoss"], value_loss=terms["valueLoss"],
                              entropy_loss=terms["entropyLoss"], loss=terms["loss"])
        grad_norm = self.gradient_step(terms["loss"], as_tensor=True)
        self.batch_learned()
        with torch.no_grad():  # one conversion for all diagnostics
            names = [n for n in ImpalaOptInfo._fields if n not in ("gradNorm", "batchLag")]
            values = torch.stack([terms[n].float() for n in names] + [grad_norm.float()])
            values = dict(zip(names + ["gradNorm"], values.tolist()))
        values["batchLag"] = float(policy_lag)
        return ImpalaOptInfo(**{name: [value] for name, value in values.items()})

    def next_batch(self, samples) -> ImpalaBatch:
        """The batch to learn from: the oldest unconsumed FIFO batch (asynchronous
        mode) or ``samples``; the agent's observation statistics are updated with it."""
        if self.async_mode:
            batch = self.fifo.batch(self.fifo_position)
        else:
            if samples is None:
                raise ValueError(f"{type(self).__name__}.optimize_agent: samples=None outside "
                                 f"asynchronous mode (call async_initialize for FIFO-fed "
                                 f"training)")
            batch = self.samples_to_buffer(samples)
        update = getattr(self.agent, "update_obs_rms", None)
        if update is not None:
            update(batch.observation)
        return batch

    def batch_learned(self) -> None:
        """After the last gradient step on a batch: the schedule steps, and every
        ``updates_per_sync`` batches (asynchronous mode) the parameters are published."""
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        if self.async_mode and self.learned_version % self.updates_per_sync == 0:
            self.agent.send_shared_memory()
            self._published_version[()] = self.learned_version

    def loss(self, batch: ImpalaBatch) -> dict:
        """The IMPALA loss on one batch (on the agent's device) and its diagnostics."""
        inputs = AgentInputs(batch.observation, batch.prev_action, batch.prev_reward)
        if self.agent.recurrent:
            if batch.init_rnn_state is None:
                raise ValueError("Impala: a recurrent agent needs the batch's initial rnn "
                                 "state (agent_info.prev_rnn_state), which the samples lack")
            init_rnn_state = self.rnn_state_for_model(batch.init_rnn_state)
            dist_info, value, _ = self.agent(*inputs, init_rnn_state)
        else:
            dist_info, value = self.agent(*inputs)
        dist = self.agent.distribution
        log_pi = dist.log_likelihood(batch.action, dist_info)
        with torch.no_grad():
            log_rho = log_pi - dist.log_likelihood(batch.action, batch.behaviour_dist_info)
            vs, pg_advantage, valid = self.vtrace_targets(batch, value.detach(), log_rho)
            if self.normalize_advantage:
                pg_advantage = self.normalized(pg_advantage, valid)

        pi_loss = losses.policy_gradient_loss(log_pi, pg_advantage, valid)
        value_loss = self.value_loss(value, vs, valid)
        entropy_each = dist.entropy(dist_info)
        entropy_loss = self.entropy_loss_coeff * losses.entropy_loss(entropy_each, valid)
        loss = pi_loss + value_loss + entropy_loss

        with torch.no_grad():
            rho = torch.exp(log_rho)
            entropy_each = entropy_each.detach()
            return dict(
                loss=loss, piLoss=pi_loss, valueLoss=value_loss, entropyLoss=entropy_loss,
                entropy=valid_mean(entropy_each, valid),
                perplexity=valid_mean(torch.exp(entropy_each), valid),
                rhoMean=valid_mean(rho, valid),
                rhoClipFraction=self.clip_fraction(rho, self.rho_bar, valid),
                cClipFraction=self.clip_fraction(rho, self.c_bar, valid),
            )

    def vtrace_targets(self, batch: ImpalaBatch, value: torch.Tensor, log_rho: torch.Tensor):
        """``(vs, pg_advantage, valid)`` of a batch: V-trace with truncated episodes
        bootstrapped from ``timeout_value``; ``valid`` is None for mid-batch-reset data."""
        reward = batch.reward * self.reward_scale if self.reward_scale != 1 else batch.reward
        if batch.timeout is not None:  # timeout_value is the critic's, in scaled units
            reward = losses.timeout_bootstrapped_reward(reward, batch.timeout,
                                                        batch.timeout_value, self.discount)
        vs, pg_advantage = losses.vtrace(
            reward, value, batch.done, batch.bootstrap_value, self.discount, log_rho,
            rho_bar=self.rho_bar, c_bar=self.c_bar, pg_rho_bar=self.pg_rho_bar,
            lambda_=self.vtrace_lambda, weight_pg_advantage=self.weight_pg_advantage,
        )
        valid = None if self.mid_batch_reset else losses.valid_from_done(batch.done)
        return vs, pg_advantage, valid

    @staticmethod
    def clip_fraction(rho: torch.Tensor, bar: float | None, valid) -> torch.Tensor:
        """Share of the valid entries whose ratio the truncation at ``bar`` changes.

        Ratios within a relative 1e-5 of ``bar`` do not count: identical policies give
        ratios of 1 +- float32 rounding (the learner's and the sampler's forward passes
        batch differently), and those are not truncations worth reporting.
        """
        if bar is None:
            return rho.new_zeros(())
        return valid_mean((rho > bar * (1 + 1e-5)).to(rho.dtype), valid)
