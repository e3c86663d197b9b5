"""Deep Q-learning (Mnih et al. 2015) with the common improvements as options.

Double DQN (van Hasselt et al. 2016), dueling heads (a model option), prioritized
replay (Schaul et al. 2016), n-step returns, Huber or squared loss, hard or soft
target updates, and bootstrapping through time-limit truncations.
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import torch
import torch.nn.functional as F

from rlpyt.algos.base import RlAlgorithm
from rlpyt.algos.dqn.replay import SamplesToBuffer, SamplesToBufferTl, replay_buffer_class
from rlpyt.algos.dqn.targets import n_step_q_target
from rlpyt.algos.optim import (
    backward,
    clip_grad_norm,
    clip_grad_norm_no_grad,
    direct_step_for,
    make_optimizer,
)
from rlpyt.replays.uniform import UniformReplay
from rlpyt.utils.buffer import buffer_to
from rlpyt.utils.quick_args import save__init__args
from rlpyt.utils.returns import valid_from_done
from rlpyt.utils.tensor import select_at_indexes

__all__ = ["DQN", "OptInfo", "clip_grad_norm", "split_batch", "updates_per_optimize"]

OptInfo = namedtuple("OptInfo", ["loss", "gradNorm", "tdAbsErr"])

_REDUCTION = {"none": 0, "mean": 1}  # torch's loss-reduction enum (torch.nn._reduction).


def updates_per_optimize(replay_ratio: float, sampler_batch_size: int, batch_size: int) -> int:
    """Gradient steps per sampler batch so that each sample is replayed ``replay_ratio``
    times on average: ``round(replay_ratio * sampler_batch_size / batch_size)``."""
    exact = replay_ratio * sampler_batch_size / batch_size
    updates = round(exact)
    if updates < 1:
        raise ValueError(
            f"replay_ratio={replay_ratio} with batch_size={batch_size} and a sampler batch of "
            f"{sampler_batch_size} env steps (batch_T * batch_B) gives {exact:.3g} gradient "
            f"steps per iteration, which rounds to 0; use replay_ratio >= "
            f"{batch_size / (2 * sampler_batch_size):.3g}, a smaller batch_size, or a larger "
            f"sampler batch"
        )
    if abs(updates - exact) > 0.1 * exact:
        warnings.warn(
            f"replay_ratio={replay_ratio} asks for {exact:.3g} gradient steps per sampler "
            f"batch; doing {updates} (an effective replay ratio of "
            f"{updates * batch_size / sampler_batch_size:.3g})",
            stacklevel=3,
        )
    return updates


def split_batch(batch, size: int) -> list:
    """A batch of torch tensors (namedtuples of them, ``None`` fields kept) cut along
    dim 0 into consecutive batches of ``size`` (views, no copies)."""
    if isinstance(batch, torch.Tensor):
        return list(batch.split(size))
    parts = [None if field is None else split_batch(field, size) for field in batch]
    n = next(len(p) for p in parts if p is not None)
    return [type(batch)(*(None if p is None else p[i] for p in parts)) for i in range(n)]


def _check(name: str, value, ok: bool, valid: str) -> None:
    if not ok:
        raise ValueError(f"DQN: {name}={value!r} is invalid; expected {valid}")


class DQN(RlAlgorithm):
    """Q-learning from a replay buffer filled by the sampler.

    Each ``optimize_agent(itr, samples)`` appends the batch to the replay buffer and,
    once ``min_steps_learn`` env steps have been collected, takes
    ``round(replay_ratio * sampler_batch_size / batch_size)`` gradient steps.  The loss is
    ``Huber(y - Q(s, a))`` with ``y = R^n + discount^n (1 - done_n) Q_target(s_n, a*)``,
    ``a* = argmax_a Q_target(s_n, a)`` (or ``argmax_a Q(s_n, a)`` with ``double_dqn``).
    Reset collectors (``mid_batch_reset=True``) store every sampled step.  Wait-reset
    collectors leave a finished env idle until the batch ends and write filler steps
    after its ``done``; those steps are stored too, but masked out of the loss (as
    steps whose n-step window ends in a time-limit truncation are).

    Args:
        discount: discount factor (default 0.99).
        batch_size: transitions per gradient step (default 32).
        min_steps_learn: env steps collected before learning starts (default 50,000).
        delta_clip: Huber loss threshold; ``None`` for the squared error (default 1).
            Priorities are ``|y - Q|`` clipped at it.
        replay_size: transitions held by the replay buffer (default 1e6).
        replay_ratio: times each collected transition is replayed on average, i.e.
            ``batch_size * updates / env steps`` (default 8).
        target_update_tau: weight of the model in each target update, 1 for a copy,
            below 1 for Polyak averaging (default 1).
        target_update_interval: gradient steps between target updates (default 312).
        n_step_return: rewards summed before bootstrapping (default 1).
        learning_rate: optimizer learning rate (default 2.5e-4).
        OptimCls: optimizer class (default ``torch.optim.Adam``).
        optim_kwargs: extra optimizer keywords (default None).
        initial_optim_state_dict: optimizer state loaded at start (default None).
        clip_grad_norm: gradient norm clip; ``None`` disables clipping (default 10).
        eps_steps: env step at which the agent's epsilon reaches ``eps_final``; it starts
            falling at ``min_steps_learn`` (default 1e6).
        double_dqn: select the bootstrap action with the online network (default False).
        prioritized_replay: sample by priority (default False).
        pri_alpha: priority exponent (default 0.6).
        pri_beta_init, pri_beta_final, pri_beta_steps: importance-sampling exponent,
            linear from ``pri_beta_init`` to ``pri_beta_final`` over ``pri_beta_steps``
            env steps (defaults 0.4, 1, 50e6).
        default_priority: priority of new transitions before the first update; ``None``
            (default) uses ``delta_clip`` (the largest clipped TD error), or 1.
        ReplayBufferCls: replay buffer class; ``None`` (default) picks one by the rule of
            ``rlpyt.algos.dqn.replay`` (frames for uint8 image stacks, prioritized,
            time-limit aware).
        updates_per_sync: with asynchronous sampling, optimizer iterations between
            publishing new parameters to the samplers (default 1).
        bootstrap_timelimit: bootstrap through time-limit truncations
            (``env_info.timeout``) instead of treating them as terminal: transitions whose
            n-step window ends in a truncation are left out of the loss (the observation
            after a truncation is never stored), all others bootstrap (default True).

    Env steps are converted to sampler iterations with the whole sampler batch
    (``batch_T * batch_B * world_size``).
    """

    opt_info_fields = tuple(OptInfo._fields)
    OptInfoCls = OptInfo

    def __init__(
        self,
        discount: float = 0.99,
        batch_size: int = 32,
        min_steps_learn: int = int(5e4),
        delta_clip: float | None = 1.0,
        replay_size: int = int(1e6),
        replay_ratio: float = 8,
        target_update_tau: float = 1,
        target_update_interval: int = 312,
        n_step_return: int = 1,
        learning_rate: float = 2.5e-4,
        OptimCls=torch.optim.Adam,
        optim_kwargs: dict | None = None,
        initial_optim_state_dict: dict | None = None,
        clip_grad_norm: float | None = 10.0,
        eps_steps: int = int(1e6),
        double_dqn: bool = False,
        prioritized_replay: bool = False,
        pri_alpha: float = 0.6,
        pri_beta_init: float = 0.4,
        pri_beta_final: float = 1.0,
        pri_beta_steps: int = int(50e6),
        default_priority: float | None = None,
        ReplayBufferCls=None,
        updates_per_sync: int = 1,
        bootstrap_timelimit: bool = True,
    ):
        _check("discount", discount, 0 <= discount <= 1, "a number in [0, 1]")
        for name, value in (("batch_size", batch_size), ("replay_size", replay_size),
                            ("target_update_interval", target_update_interval),
                            ("n_step_return", n_step_return),
                            ("updates_per_sync", updates_per_sync)):
            _check(name, value, int(value) == value and value >= 1, "an integer >= 1")
        _check("min_steps_learn", min_steps_learn, min_steps_learn >= 0, "a number >= 0")
        _check("eps_steps", eps_steps, eps_steps >= 0, "a number >= 0")
        _check("replay_ratio", replay_ratio, replay_ratio > 0, "a number > 0")
        _check("target_update_tau", target_update_tau, 0 < target_update_tau <= 1,
               "a number in (0, 1]")
        _check("delta_clip", delta_clip, delta_clip is None or delta_clip > 0, "None or > 0")
        _check("clip_grad_norm", clip_grad_norm, clip_grad_norm is None or clip_grad_norm > 0,
               "None or > 0")
        _check("pri_beta_steps", pri_beta_steps, pri_beta_steps > 0, "a number > 0")
        self._batch_size = int(batch_size)  # Before save__init__args: batch_size is a property.
        save__init__args(locals())
        self.optim_kwargs = dict(optim_kwargs or {})
        self.update_counter = 0
        self.async_ = False

    # ---- set-up ------------------------------------------------------------------------
    def initialize(self, agent, n_itr, batch_spec, mid_batch_reset=False, examples=None,
                   world_size=1, rank=0):
        """Attach the agent, size the schedules, build the replay buffer and optimizer."""
        self._setup(agent, n_itr, batch_spec, mid_batch_reset, examples, world_size)
        self.replay_buffer = self.make_replay_buffer(examples, batch_spec, async_=False)
        self.optim_initialize(rank)

    def async_initialize(self, agent, sampler_n_itr, batch_spec, mid_batch_reset, examples,
                         world_size=1):
        """As ``initialize`` but with a shared-memory replay buffer, which is returned;
        the runner appends ``samples_to_buffer(samples)`` to it and then calls
        ``optim_initialize`` in the optimizer process."""
        self._setup(agent, sampler_n_itr, batch_spec, mid_batch_reset, examples, world_size)
        self.replay_buffer = self.make_replay_buffer(examples, batch_spec, async_=True)
        self.async_ = True
        return self.replay_buffer

    def optim_initialize(self, rank: int = 0) -> None:
        self.rank = rank
        self.optimizer = make_optimizer(
            self.OptimCls, self.agent.parameters(), self.learning_rate, self.optim_kwargs
        )
        if self.initial_optim_state_dict is not None:
            self.optimizer.load_state_dict(self.initial_optim_state_dict)
        self._params = [p for group in self.optimizer.param_groups for p in group["params"]]
        # The fused Adam kernel called directly (same update): Adam.step's bookkeeping
        # costs more than the kernel for small networks.  RMSprop is compiled into one
        # loop when the run's planned optimizer work repays the compile (long runs only).
        self._direct_step = direct_step_for(self.optimizer, planned_work=self.planned_work())
        self._optimize_calls = 0

    def planned_work(self) -> float:
        """Gradient steps this run plans times the parameter elements they update (picks
        the optimizer step: ``rlpyt.algos.optim.direct_step_for``)."""
        steps = getattr(self, "n_itr", 0) * getattr(self, "updates_per_optimize", 1)
        return float(steps * sum(p.numel() for p in self._params))

    def _setup(self, agent, n_itr, batch_spec, mid_batch_reset, examples, world_size):
        name = type(self).__name__
        if examples is None:
            raise ValueError(f"{name}.initialize needs the sampler's examples to build its "
                             f"replay buffer (got examples=None)")
        self.agent = agent
        self.n_itr = n_itr
        self.batch_spec = batch_spec
        self.mid_batch_reset = mid_batch_reset
        self.world_size = world_size
        self.sampler_bs = batch_spec.size
        self.itr_bs = batch_spec.size * world_size  # Env steps per iteration, all ranks.
        self.updates_per_optimize = updates_per_optimize(
            self.replay_ratio, self.sampler_bs, self.batch_size)
        self.min_itr_learn = int(self.min_steps_learn // self.itr_bs)
        eps_itr_max = max(self.min_itr_learn, int(self.eps_steps // self.itr_bs))
        agent.set_epsilon_itr_min_max(self.min_itr_learn, eps_itr_max)

    def make_replay_buffer(self, examples, batch_spec, async_: bool = False):
        """The replay buffer for one example step (see ``rlpyt.algos.dqn.replay``)."""
        env_info = examples["env_info"]
        has_timeout = "timeout" in getattr(env_info, "_fields", ())
        if self.bootstrap_timelimit and not has_timeout:
            warnings.warn(
                f"{type(self).__name__}: bootstrap_timelimit=True but env_info has no "
                f"'timeout' field, so time limits cannot be told apart from terminations "
                f"and every done is treated as terminal",
                stacklevel=3,
            )
        self._env_timeout = self.bootstrap_timelimit and has_timeout
        # Wait-reset filler steps are masked through the same stored flag.
        self._store_timeout = self._env_timeout or not self.mid_batch_reset
        fields = dict(observation=examples["observation"], action=examples["action"],
                      reward=examples["reward"], done=examples["done"])
        if self._store_timeout:
            example = SamplesToBufferTl(**fields, timeout=np.zeros((), dtype=bool))
        else:
            example = SamplesToBuffer(**fields)
        ReplayCls = self.ReplayBufferCls or replay_buffer_class(
            examples["observation"], self.prioritized_replay, self._store_timeout, async_)
        kwargs = dict(size=self.replay_size, B=batch_spec.B, discount=self.discount,
                      n_step_return=self.n_step_return)
        if self.prioritized_replay:
            default = self.default_priority
            if default is None:
                default = self.delta_clip if self.delta_clip is not None else 1.0
            kwargs.update(alpha=self.pri_alpha, beta=self.pri_beta_init,
                          default_priority=default)
        replay = ReplayCls(example, **kwargs)
        if hasattr(replay, "prev_inputs") and not self._model_uses_prev_inputs():
            replay.prev_inputs = False  # Skip gathering inputs the model ignores.
        return replay

    def _model_uses_prev_inputs(self) -> bool:
        """False only for models that declare ``uses_prev_action_reward = False``."""
        return bool(getattr(type(self.agent.model), "uses_prev_action_reward", True))

    def samples_to_buffer(self, samples):
        """The fields of a sampler batch that the replay buffer stores."""
        fields = dict(observation=samples.env.observation, action=samples.agent.action,
                      reward=samples.env.reward, done=samples.env.done)
        if self._store_timeout:
            return SamplesToBufferTl(**fields, timeout=self.masked_steps(samples))
        return SamplesToBuffer(**fields)

    def masked_steps(self, samples) -> torch.Tensor:
        """The stored ``timeout`` flag ``[T, B]``: transitions whose n-step window ends at
        a flagged step are left out of the loss.  Flagged: time-limit truncations (with
        ``bootstrap_timelimit``), and wait-reset collectors' filler steps after an env's
        first ``done`` in the batch (they carry no real data)."""
        done = torch.as_tensor(samples.env.done)
        flagged = torch.zeros_like(done, dtype=torch.bool)
        if self._env_timeout:
            flagged |= torch.as_tensor(samples.env.env_info.timeout).bool()
        if not self.mid_batch_reset:
            flagged |= valid_from_done(done) == 0
        return flagged

    # ---- training -------------------------------------------------------------------------
    def optimize_agent(self, itr, samples=None, sampler_itr=None):
        """Store ``samples`` (if given), then take this iteration's gradient steps.

        ``sampler_itr`` (asynchronous runners) drives the schedules instead of ``itr``.
        Returns ``OptInfo`` lists with one entry per gradient step.
        """
        itr = itr if sampler_itr is None else sampler_itr
        if samples is not None:
            self.replay_buffer.append_samples(self.samples_to_buffer(samples))
        opt_info = self.OptInfoCls(*([] for _ in self.OptInfoCls._fields))
        if itr < self.min_itr_learn or not self._replay_ready():
            return opt_info
        if self.prioritized_replay:
            self.replay_buffer.set_beta(self.pri_beta_at(itr))
        # Asynchronous runs: one gradient step per call; the runner holds the replay ratio.
        batches = self.iteration_batches(1 if self.async_ else self.updates_per_optimize)
        records = [self.gradient_step(batch) for batch in batches]
        loss, grad_norm, priorities = zip(*records)
        opt_info[0].extend(torch.stack(loss).tolist())
        opt_info[1].extend(torch.stack(grad_norm).tolist())
        opt_info[2].extend(torch.stack(priorities).mean(dim=-1).tolist())
        self._after_optimize()
        return opt_info

    def iteration_batches(self, n: int) -> list:
        """The replay batches of this iteration's ``n`` gradient steps: ``None`` each
        (``gradient_step`` samples its own), or, from a synchronous uniform replay, all
        ``n`` drawn by one ``sample_batch(n * batch_size)`` and split.

        Both give independent uniform batches from the same buffer contents (nothing is
        appended between the steps of an iteration; ``UniformReplay`` even draws the
        same positions either way), but one large gather costs a fraction of ``n``
        small ones.  Prioritized replay must sample after each priority update, and an
        asynchronous buffer may grow between steps, so those sample step by step.
        """
        replay = self.replay_buffer
        if (n < 2 or self.prioritized_replay or getattr(replay, "async_", False)
                or not isinstance(replay, UniformReplay)):
            return [None] * n
        return split_batch(replay.sample_batch(n * self.batch_size), self.batch_size)

    def gradient_step(self, batch=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One update from a replay batch (sampled here if ``batch`` is None), and a target
        update when due; returns ``(loss, grad norm, priorities)`` as tensors, read out
        once per iteration."""
        if batch is None:
            batch = self.replay_buffer.sample_batch(self.batch_size)
        if self.agent.device.type != "cpu":
            batch = buffer_to(batch, self.agent.device)
        loss, priorities = self.loss(batch)
        for param in self._params:
            param.grad = None
        backward(loss)
        grad_norm = self._clip_gradients()
        self._optimizer_step()
        if self.prioritized_replay:
            self.replay_buffer.update_batch_priorities(priorities.cpu())
        self.update_counter += 1
        if self.update_counter % self.target_update_interval == 0:
            self.agent.update_target(self.target_update_tau)
        return loss.detach(), grad_norm, priorities

    def _optimizer_step(self) -> None:
        direct = getattr(self, "_direct_step", None)
        if direct is not None and direct.optimizers == [self.optimizer]:
            with torch.no_grad():
                direct.step_no_grad()
        else:
            self.optimizer.step()

    def _replay_ready(self) -> bool:
        low, high = self.replay_buffer.valid_row_range()
        return high > low

    def _clip_gradients(self) -> torch.Tensor:
        # The gradients do not require grad (no create_graph), so no no_grad() is needed.
        return clip_grad_norm_no_grad(self._params, self.clip_grad_norm)

    def _after_optimize(self) -> None:
        """Asynchronous runs: publish the parameters every ``updates_per_sync`` calls."""
        self._optimize_calls += 1
        if self.async_ and self._optimize_calls % self.updates_per_sync == 0:
            self.agent.send_shared_memory()

    def pri_beta_at(self, itr: int) -> float:
        """Importance-sampling exponent after ``itr + 1`` iterations of env steps."""
        progress = min(1.0, (itr + 1) * self.itr_bs / self.pri_beta_steps)
        return self.pri_beta_init + progress * (self.pri_beta_final - self.pri_beta_init)

    def loss(self, samples):
        """``(loss, priorities)`` for a replay batch already on the agent's device.

        ``priorities`` are ``|y - Q(s, a)|`` per sample, clipped at ``delta_clip`` with
        prioritized replay (they are logged as ``tdAbsErr``).
        """
        q = self.agent(*samples.agent_inputs)
        q = q.gather(-1, samples.action.unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            target_q = self.agent.target(*samples.target_inputs)
            if self.double_dqn:
                next_action = self.agent(*samples.target_inputs).argmax(dim=-1)
                next_value = select_at_indexes(next_action, target_q)
            else:
                next_value = target_q.amax(dim=-1)
            y = n_step_q_target(samples.return_, samples.done_n, next_value,
                                self.discount ** self.n_step_return)
            priorities = (y - q).abs_()
            if self.prioritized_replay and self.delta_clip is not None:
                priorities.clamp_(max=self.delta_clip)
        if not self.prioritized_replay and not self._any_masked(samples):
            return self.td_loss(q, y, reduction="mean"), priorities  # One fused op.
        losses = self.td_loss(q, y, reduction="none")
        if self.prioritized_replay:
            losses = losses * samples.is_weights
        return self.masked_mean(losses, samples), priorities

    def td_loss(self, q: torch.Tensor, y: torch.Tensor, reduction: str) -> torch.Tensor:
        """Huber loss of ``y - q`` at ``delta_clip`` (``None``: half the squared error),
        reduced by ``reduction`` (``"none"`` or ``"mean"``).

        Calls the loss kernels ``F.huber_loss`` / ``F.mse_loss`` end in when ``q`` and
        ``y`` have one shape: their Python wrappers' broadcasting checks cost more than
        the kernel for a batch of a few dozen.
        """
        if q.shape != y.shape:
            if self.delta_clip is None:
                return F.mse_loss(q, y, reduction=reduction).mul_(0.5)
            return F.huber_loss(q, y, reduction=reduction, delta=self.delta_clip)
        if self.delta_clip is None:
            return torch._C._nn.mse_loss(q, y, _REDUCTION[reduction]).mul_(0.5)
        return torch._C._nn.huber_loss(q, y, _REDUCTION[reduction], self.delta_clip)

    def _any_masked(self, samples) -> bool:
        """Whether ``masked_mean`` would drop any sample of this batch."""
        if not getattr(self, "_store_timeout", False):
            return False
        timeout_n = samples.timeout_n
        if timeout_n.device.type != "cpu":
            return True  # Masking is then cheaper than a device sync to check.
        return np.count_nonzero(timeout_n.numpy()) > 0  # Cheaper than Tensor.any() + item.

    def masked_mean(self, losses: torch.Tensor, samples) -> torch.Tensor:
        """Mean of ``losses`` without transitions whose n-step window ends in a time-limit
        truncation (with ``bootstrap_timelimit``; their next observation is not stored)."""
        if not self._any_masked(samples):
            return losses.mean()  # Truncations are rare; skip the mask (no GPU sync here).
        valid = torch.logical_not(samples.timeout_n).to(losses.dtype)
        return (losses * valid).sum() / valid.sum().clamp(min=1)

    @property
    def batch_size(self) -> int:
        return self._batch_size
