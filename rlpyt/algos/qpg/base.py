"""What DDPG, TD3 and SAC share: the replay buffer, the update schedule, optimizers and
diagnostics.  Each algorithm's losses live in its own module, on one screen.

Schedule.  Every ``optimize_agent(itr, samples)`` appends the new ``[T, B]`` batch to
the replay buffer and, once ``min_steps_learn`` env steps have been collected, takes
``replay_ratio * T * B / batch_size`` gradient updates (classic rlpyt semantics: the
replay ratio counts replayed samples per new sample).  A fractional number of updates
per iteration is carried over, so the long-run ratio is exact.

Time limits.  With ``bootstrap_timelimit=True`` the replay buffer also stores
``env_info.timeout`` and reports ``timeout_n``; samples whose n-step window ended in a
truncation are masked out of every loss (``targets.timelimit_valid``), so truncated
episodes are never treated as terminal.  With ``False``, a truncation counts as a
termination.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from rlpyt.algos.base import RlAlgorithm
from rlpyt.algos.optim import (
    backward,
    clip_grad_norms,
    make_optimizer,
)
from rlpyt.algos.qpg.targets import timelimit_valid
from rlpyt.utils.buffer import buffer_to
from rlpyt.utils.collections import namedarraytuple

__all__ = ["Diagnostics", "QpgAlgo", "SamplesToBuffer", "SamplesToBufferTl", "weighted_mean"]

SamplesToBuffer = namedarraytuple("SamplesToBuffer", ["observation", "action", "reward", "done"])
SamplesToBufferTl = namedarraytuple("SamplesToBufferTl", SamplesToBuffer._fields + ("timeout",))

# Optimizers that have a fused CPU/CUDA kernel, used when the user sets no implementation.


def weighted_mean(values: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """``sum(values * weights)`` for weights from ``QpgAlgo.loss_weights``, or the plain
    mean when ``weights`` is None."""
    if weights is None:
        return values.mean()
    # One dot product (one autograd node) for the usual [B] losses.
    return torch.dot(values, weights) if values.dim() == 1 else (values * weights).sum()


# ---- argument checks ---------------------------------------------------------------------
def check_int(owner: str, name: str, value, low: int) -> int:
    """``value`` as an int; integral floats such as ``1e4`` are accepted."""
    integral = isinstance(value, (int, np.integer)) or (
        isinstance(value, (float, np.floating)) and float(value).is_integer()
    )
    if isinstance(value, bool) or not integral or value < low:
        raise ValueError(f"{owner}: {name}={value!r} must be an integer >= {low}")
    return int(value)


def check_positive(owner: str, name: str, value, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
    if not ok or not value > 0 or not math.isfinite(value):
        extra = " or None" if allow_none else ""
        raise ValueError(f"{owner}: {name}={value!r} must be a positive finite number{extra}")


def check_fraction(owner: str, name: str, value, low_open: bool = False) -> None:
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
    low_ok = ok and (value > 0 if low_open else value >= 0)
    if not (low_ok and value <= 1):
        interval = "(0, 1]" if low_open else "[0, 1]"
        raise ValueError(f"{owner}: {name}={value!r} must lie in {interval}")


# ---- diagnostics ---------------------------------------------------------------------------
class Diagnostics:
    """Per-update diagnostics kept as tensors and converted to floats once per
    ``optimize_agent`` (a single device sync instead of one per value and update)."""

    def __init__(self, fields: tuple[str, ...]):
        self.fields = tuple(fields)
        self._rows: list[tuple[tuple[str, ...], torch.Tensor]] = []

    def add(self, **values: torch.Tensor) -> None:
        """Record one update's values (0-dim float tensors), stacked in one op."""
        with torch.no_grad():
            self._rows.append((tuple(values), torch.stack(list(values.values()))))

    def opt_info(self, OptInfoCls, owner: str, first_update: int):
        """``OptInfoCls`` of float lists; raises ``FloatingPointError`` on NaN/inf."""
        lists = {name: [] for name in self.fields}
        if not self._rows:
            return OptInfoCls(**lists)
        floats = torch.cat([row for _, row in self._rows]).tolist()
        names = [name for row_names, _ in self._rows for name in row_names]
        for name, value in zip(names, floats):
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"{owner}: {name} is {value} in the updates from gradient step "
                    f"{first_update} on; check rewards and observations for NaN/inf, or "
                    f"lower the learning rate"
                )
            lists[name].append(value)
        return OptInfoCls(**lists)


# ---- the base algorithm --------------------------------------------------------------------
class QpgAlgo(RlAlgorithm):
    """Base of the replay-based actor-critic algorithms (DDPG, TD3, SAC).

    Subclasses store their keywords (at least ``discount``, ``batch_size``,
    ``min_steps_learn``, ``replay_size``, ``replay_ratio``, ``n_step_return``,
    ``bootstrap_timelimit``, ``OptimCls``, ``optim_kwargs``, ``clip_grad_norm``,
    ``initial_optim_state_dict``, ``ReplayBufferCls``, ``updates_per_sync``) and
    implement ``make_optimizers`` and ``train_step``.
    """

    bootstrap_value = False
    OptInfoCls = None  # set by subclasses: a namedtuple of the diagnostics' names

    # ---- set-up ------------------------------------------------------------------
    def check_common_args(self) -> None:
        name = type(self).__name__
        check_fraction(name, "discount", self.discount)
        self.batch_size = check_int(name, "batch_size", self.batch_size, 1)
        self.min_steps_learn = check_int(name, "min_steps_learn", self.min_steps_learn, 0)
        self.replay_size = check_int(name, "replay_size", self.replay_size, 1)
        check_positive(name, "replay_ratio", self.replay_ratio)
        self.n_step_return = check_int(name, "n_step_return", self.n_step_return, 1)
        self.updates_per_sync = check_int(name, "updates_per_sync", self.updates_per_sync, 1)
        check_positive(name, "clip_grad_norm", self.clip_grad_norm, allow_none=True)
        self.optim_kwargs = dict(self.optim_kwargs or {})

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self._batch_size = value

    def initialize(
        self,
        agent,
        n_itr: int,
        batch_spec,
        mid_batch_reset: bool = False,
        examples=None,
        world_size: int = 1,
        rank: int = 0,
    ) -> None:
        self._setup(agent, n_itr, batch_spec, mid_batch_reset, examples, world_size, False)
        self.optim_initialize(rank)

    def async_initialize(
        self,
        agent,
        sampler_n_itr: int,
        batch_spec,
        mid_batch_reset: bool,
        examples,
        world_size: int = 1,
    ):
        """Build the shared-memory replay buffer the async sampler writes into; each
        ``optimize_agent`` call then takes ``updates_per_sync`` updates."""
        self._setup(agent, sampler_n_itr, batch_spec, mid_batch_reset, examples, world_size, True)
        return self.replay_buffer

    def _setup(self, agent, n_itr, batch_spec, mid_batch_reset, examples, world_size, async_):
        name = type(self).__name__
        if not mid_batch_reset:
            raise ValueError(
                f"{name}: replay needs mid_batch_reset=True collection (a reset collector such "
                f"as CpuResetCollector, the samplers' default); wait-reset collectors leave "
                f"invalid steps in the batch"
            )
        if examples is None:
            raise ValueError(f"{name}.initialize: examples (from sampler.initialize) are needed "
                             f"to allocate the replay buffer")
        self.agent = agent
        self.n_itr = int(n_itr)
        self.batch_spec = batch_spec
        self.world_size = world_size
        self.async_mode = async_
        self.updates_per_itr = self.replay_ratio * batch_spec.size / self.batch_size
        self._update_credit = 0.0
        # Learn once min_steps_learn steps (over all ranks) are stored, and no earlier
        # than the replay can hand out a complete n-step sample.
        steps_per_itr = batch_spec.size * world_size
        n_step_itrs = math.ceil((self.n_step_return + 1) / batch_spec.T) - 1
        self.min_itr_learn = max(int(self.min_steps_learn // steps_per_itr), n_step_itrs)
        agent.give_min_itr_learn(self.min_itr_learn)
        self.replay_buffer = self.make_replay_buffer(examples, batch_spec, async_)

    def make_replay_buffer(self, examples, batch_spec, async_: bool):
        from rlpyt.replays.non_sequence import time_limit, uniform

        example = self.buffer_example(examples)
        if self.ReplayBufferCls is not None:
            ReplayCls = self.ReplayBufferCls
        elif self.bootstrap_timelimit:
            ReplayCls = (time_limit.AsyncTlUniformReplayBuffer if async_
                         else time_limit.TlUniformReplayBuffer)
        else:
            ReplayCls = uniform.AsyncUniformReplayBuffer if async_ else uniform.UniformReplayBuffer
        replay = ReplayCls(
            example=example,
            size=self.replay_size,
            B=batch_spec.B,
            discount=self.discount,
            n_step_return=self.n_step_return,
        )
        if hasattr(replay, "prev_inputs") and not self._models_use_prev_inputs():
            replay.prev_inputs = False  # Skip gathering inputs that no model reads.
        return replay

    def _models_use_prev_inputs(self) -> bool:
        """False only when the agent's policy and critic both declare
        ``uses_prev_action_reward = False`` (as the ``rlpyt.models.qpg`` models do)."""
        models = [getattr(self.agent, "model", None), getattr(self.agent, "q_model", None)]
        return any(
            getattr(type(getattr(m, "module", m)), "uses_prev_action_reward", True)
            for m in models if m is not None
        )

    def buffer_example(self, examples):
        fields = dict(
            observation=examples["observation"],
            action=examples["action"],
            reward=examples["reward"],
            done=examples["done"],
        )
        if not self.bootstrap_timelimit:
            return SamplesToBuffer(**fields)
        timeout = getattr(examples["env_info"], "timeout", None)
        if timeout is None:
            raise ValueError(
                f"{type(self).__name__}: bootstrap_timelimit=True needs env_info.timeout "
                f"(Gymnasium envs made with rlpyt.envs.gym.make have it); this env's env_info "
                f"is {examples['env_info']!r}. Set bootstrap_timelimit=False to treat every "
                f"done as a termination"
            )
        return SamplesToBufferTl(**fields, timeout=np.asarray(timeout, dtype=bool))

    def samples_to_buffer(self, samples):
        """The fields of a sampler batch that the replay buffer stores."""
        fields = dict(
            observation=samples.env.observation,
            action=samples.agent.action,
            reward=samples.env.reward,
            done=samples.env.done,
        )
        if not self.bootstrap_timelimit:
            return SamplesToBuffer(**fields)
        return SamplesToBufferTl(**fields, timeout=samples.env.env_info.timeout)

    # ---- optimizers ----------------------------------------------------------------
    def optim_initialize(self, rank: int = 0) -> None:
        """Build every optimizer (in the optimizer process for async runners)."""
        self.rank = rank
        self.optimizers = self.make_optimizers()
        self._optim_params = {
            name: [p for group in opt.param_groups for p in group["params"]]
            for name, opt in self.optimizers.items()
        }
        if self.initial_optim_state_dict is not None:
            self.load_optim_state_dict(self.initial_optim_state_dict)

    def make_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Optimizers by name (e.g. ``pi``, ``q``, ``alpha``)."""
        raise NotImplementedError

    def make_optimizer(self, params, learning_rate: float) -> torch.optim.Optimizer:
        """``OptimCls(params, lr=learning_rate, **optim_kwargs)``, fused where that is the
        same update (see ``rlpyt.algos.optim.make_optimizer``)."""
        return make_optimizer(self.OptimCls, params, learning_rate, self.optim_kwargs)

    def gradient_step(self, loss: torch.Tensor, *names: str) -> list[torch.Tensor]:
        """One backward pass of ``loss``, then clip and step each optimizer in ``names``
        over its own parameters; returns their pre-clip gradient norms as tensors (no
        device sync).  Losses of disjoint parameter sets can share one backward pass."""
        groups = [self._optim_params[name] for name in names]
        for params in groups:
            for p in params:
                p.grad = None  # as zero_grad(set_to_none=True), without its per-call overhead
        backward(loss)
        grad_norms = clip_grad_norms(groups, self.clip_grad_norm)
        self._optimizer_step(names)
        return grad_norms

    def _optimizer_step(self, names: tuple[str, ...]) -> None:
        """Step the optimizers in ``names`` through the public ``step()``: the direct fused
        Adam step of ``rlpyt.algos.optim`` saves per-call overhead that SAC's batch-256
        updates dwarf, too little end to end to rely on a private torch entry point
        (docs/algorithms.md has the figures)."""
        for name in names:
            self.optimizers[name].step()

    def optim_state_dict(self) -> dict:
        """``{name: optimizer.state_dict()}`` for every optimizer."""
        return {name: opt.state_dict() for name, opt in self.optimizers.items()}

    def load_optim_state_dict(self, state_dict: dict) -> None:
        missing = sorted(set(self.optimizers) - set(state_dict))
        if missing:
            raise KeyError(
                f"{type(self).__name__}.load_optim_state_dict: missing optimizer(s) {missing}; "
                f"expected keys {sorted(self.optimizers)}, got {sorted(state_dict)}"
            )
        for name, opt in self.optimizers.items():
            opt.load_state_dict(state_dict[name])

    def state_dict(self) -> dict:
        return {**super().state_dict(), "update_credit": self._update_credit}

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self._update_credit = float(state_dict.get("update_credit", 0.0))

    # ---- the loop ------------------------------------------------------------------
    def optimize_agent(self, itr: int, samples=None, sampler_itr: int | None = None):
        """Store ``samples`` (if given) and, once learning has started, take this
        iteration's gradient updates; returns the ``OptInfo`` of per-update lists."""
        if samples is not None:
            self.replay_buffer.append_samples(self.samples_to_buffer(samples))
        diagnostics = Diagnostics(self.OptInfoCls._fields)
        first_update = self.update_counter
        learn_itr = itr if sampler_itr is None else sampler_itr
        if learn_itr >= self.min_itr_learn:
            # The replay hands out CPU tensors: moving them to a CPU agent is a no-op walk.
            device = None if self.agent.device.type == "cpu" else self.agent.device
            for _ in range(self.updates_this_itr()):
                batch = buffer_to(self.replay_buffer.sample_batch(self.batch_size), device)
                self.update_counter += 1
                self.train_step(batch, diagnostics)
            if self.async_mode:  # Publish the policy to the sampler process.
                self.agent.send_shared_memory()
        return diagnostics.opt_info(self.OptInfoCls, type(self).__name__, first_update)

    def updates_this_itr(self) -> int:
        if self.async_mode:
            return self.updates_per_sync
        self._update_credit += self.updates_per_itr
        n_updates = int(self._update_credit)
        self._update_credit -= n_updates
        return n_updates

    def train_step(self, batch, diagnostics: Diagnostics) -> None:
        """One gradient update on a replayed batch (on the agent's device)."""
        raise NotImplementedError

    def loss_weights(self, batch) -> torch.Tensor | None:
        """Per-sample weights of the batch-mean losses: None (a plain mean), or with
        ``bootstrap_timelimit`` the valid mask (``targets.timelimit_valid``) divided by its
        sum, so ``weighted_mean`` averages over the valid samples only."""
        if not self.bootstrap_timelimit:
            return None
        valid = timelimit_valid(batch.timeout_n)
        return valid / valid.sum().clamp(min=1)
