"""R2D1: recurrent Q-learning from replayed sequences (R2D2, Kapturowski et al. 2019),
with a single learner and sampler ("R2D1").

Each replayed sequence starts from the recurrent state the agent stored while sampling,
burns the state in over ``warmup_T`` steps without gradients, and trains on the next
``batch_T`` steps with value-rescaled n-step double-DQN targets.  Sequences are
prioritized by ``eta * max + (1 - eta) * mean`` of their absolute TD errors.

Episode boundaries inside a sequence are replayed as the sampler saw them: at an
episode's first step the recurrent state, previous action and previous reward are
zeroed (classic R2D2 carries the state across, and classic rlpyt masks the loss after
the first done instead).  No target bootstraps across an episode end (``done_n``).  With
a reset collector (recommended) every step of a sequence is trained on; with a
wait-reset collector, whose filler steps after a done are meaningless, the loss stops at
the first done of each sequence.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import torch

from rlpyt.algos.dqn.dqn import DQN
from rlpyt.algos.dqn.r2d1_replay import (
    SamplesToBufferRnn,
    SamplesToBufferRnnTl,
    first_end_is_timeout,
    r2d1_replay_buffer_class,
)
from rlpyt.algos.dqn.targets import huber_loss, n_step_q_target
from rlpyt.algos.optim import backward
from rlpyt.replays.base import PrioritiesSamplesToBuffer
from rlpyt.utils.buffer import buffer_func, buffer_method, buffer_to
from rlpyt.utils.quick_args import save__init__args
from rlpyt.utils.returns import (
    discount_return_n_step,
    inverse_value_rescale,
    valid_from_done,
    value_rescale,
)
from rlpyt.utils.tensor import select_at_indexes, valid_mean

__all__ = [
    "R2D1",
    "OptInfo",
    "burn_in",
    "rescaled_n_step_target",
    "sequence_priorities",
    "unroll",
]

OptInfo = namedtuple("OptInfo", ["loss", "gradNorm", "tdAbsErr", "priority"])


def rescaled_n_step_target(
    return_: torch.Tensor,
    done_n: torch.Tensor,
    next_value: torch.Tensor,
    discount_n: float,
    value_scale_eps: float | None,
) -> torch.Tensor:
    """``h(return_ + discount_n (1 - done_n) h^-1(next_value))`` with the value rescaling
    ``h`` of ``value_rescale`` (``value_scale_eps=None``: no rescaling, the DQN target)."""
    if value_scale_eps is None:
        return n_step_q_target(return_, done_n, next_value, discount_n)
    unscaled = inverse_value_rescale(next_value, value_scale_eps)
    return value_rescale(n_step_q_target(return_, done_n, unscaled, discount_n), value_scale_eps)


def sequence_priorities(
    td_abs: torch.Tensor, valid: torch.Tensor, eta: float, dim: int = 0
) -> torch.Tensor:
    """``eta * max + (1 - eta) * mean`` of ``td_abs`` over the ``valid`` steps along ``dim``
    (the time dim); 0 where a sequence has no valid step."""
    valid = valid.to(td_abs.dtype)
    max_td = (td_abs * valid).amax(dim=dim)
    return eta * max_td + (1 - eta) * valid_mean(td_abs, valid, dim=dim)


def _zero_envs(rnn_state, reset: torch.Tensor):
    """``rnn_state`` (``[N, B, H]`` fields) with the envs where ``reset`` ``[B]`` is True zeroed."""
    keep = (~reset).view(1, -1, 1)
    return buffer_func(rnn_state, lambda state: state * keep.to(state.dtype))


def burn_in(forward, inputs, rnn_state, reset: torch.Tensor):
    """The recurrent state after running ``forward(*inputs, rnn_state) -> (output,
    next_rnn_state)`` over ``[T, B]`` ``inputs``, zeroing each env's state before the steps
    where ``reset[t, b]``.

    The inputs are cut at the time steps where some env resets, so any recurrent model
    works unchanged (one call per cut).
    """
    T = reset.shape[0]
    cuts = torch.nonzero(reset.any(dim=1)).flatten().tolist()
    bounds = sorted({0, *cuts}) + [T]
    for start, stop in zip(bounds[:-1], bounds[1:]):
        if rnn_state is not None and reset[start].any():
            rnn_state = _zero_envs(rnn_state, reset[start])
        _, rnn_state = forward(*(x[start:stop] for x in inputs), rnn_state)
    return rnn_state


def unroll(forward, inputs, rnn_state, reset: torch.Tensor) -> torch.Tensor:
    """Outputs ``[T, B, ...]`` of ``forward(*inputs, rnn_state) -> (output, next_rnn_state)``
    over ``[T, B]`` ``inputs``, with each env's state zeroed before the steps where
    ``reset[t, b]``.

    Every episode that starts after the first step runs as an extra batch row from a
    zero state (its inputs shifted to the row's start, padded at the end with repeats
    of the last step), so the model is called once on ``[T, B + resets]``.  ``rnn_state``
    is ``[N, B, H]`` fields, or ``None`` for zeros.
    """
    T, B = reset.shape
    starts = torch.nonzero(reset[1:]) + torch.tensor([1, 0], device=reset.device)
    row_start = torch.cat([reset.new_zeros(B, dtype=torch.long), starts[:, 0]])  # [B']
    row_env = torch.cat([torch.arange(B, device=reset.device), starts[:, 1]])
    steps = torch.arange(T, device=reset.device)
    read_t = (row_start[None, :] + steps[:, None]).clamp(max=T - 1)  # [T, B']
    row_inputs = tuple(x[read_t, row_env[None, :]] for x in inputs)
    if rnn_state is not None:
        n_extra = len(starts)
        rnn_state = buffer_func(
            _zero_envs(rnn_state, reset[0]),
            lambda s: torch.cat([s, s.new_zeros((s.shape[0], n_extra) + s.shape[2:])], dim=1))
    row_output, _ = forward(*row_inputs, rnn_state)
    # Step t of env b belongs to the env's latest episode row starting at or before t.
    segment = torch.cumsum(reset.long(), dim=0) - reset[:1].long()  # [T, B], 0 = first row
    row_of_segment = torch.zeros(B, int(segment.max()) + 1, dtype=torch.long,
                                 device=reset.device)
    row_of_segment[:, 0] = torch.arange(B, device=reset.device)
    row_of_segment[row_env[B:], segment[row_start[B:], row_env[B:]]] = torch.arange(
        B, B + len(starts), device=reset.device)
    row = row_of_segment[torch.arange(B, device=reset.device)[None, :], segment]  # [T, B]
    return row_output[steps[:, None] - row_start[row], row]


def _blank(values: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """``values`` ``[T, B, ...]`` with zeros where ``where`` ``[T, B]`` is True."""
    mask = where.view(where.shape + (1,) * (values.dim() - where.dim()))
    return torch.where(mask, torch.zeros_like(values), values)


class R2D1(DQN):
    """Recurrent replay distributed DQN, single learner (R2D2 without the distribution).

    Use it with ``R2d1Agent`` (or ``AtariR2d1Agent``) and a reset collector.  Each
    ``optimize_agent(itr, samples)`` appends the sampler batch to a sequence replay
    buffer, with initial priorities from the Q-values the agent recorded while sampling
    (``input_priorities``), and then takes gradient steps so that on average
    ``replay_ratio * env steps = batch_B * batch_T * gradient steps`` (fractional rates
    carry over between iterations).

    Args:
        discount: discount factor (default 0.997).
        batch_T: trained steps per sequence (default 80).
        batch_B: sequences per gradient step (default 64).
        warmup_T: burn-in steps before the trained ones, replayed without gradients from
            the stored recurrent state (default 40).
        store_rnn_state_interval: steps between stored recurrent states, which are the
            possible sequence starts (every ``interval``-th step each env has sampled,
            whatever the sampler's ``batch_T``).  ``0`` stores none (sequences start
            anywhere, from a zero state) (default 40).
        min_steps_learn: env steps collected before learning starts (default 1e5).
        delta_clip: Huber loss threshold; ``None`` (default) for the squared error.
        replay_size: env steps held by the replay (rounded down so that each env's share
            is a multiple of ``store_rnn_state_interval``; default 1e6).
        replay_ratio: trained steps (``batch_B * batch_T`` per gradient step) per env step
            collected (default 1).
        target_update_tau: weight of the model in each target update (default 1: copy).
        target_update_interval: gradient steps between target updates (default 2500).
        n_step_return: rewards summed before bootstrapping (default 5).
        learning_rate: optimizer learning rate (default 1e-4).
        OptimCls, optim_kwargs, initial_optim_state_dict: the optimizer (default Adam).
        clip_grad_norm: gradient norm clip; ``None`` disables it (default 80).
        eps_steps: env step at which the agent's epsilon reaches ``eps_final``; it starts
            falling at ``min_steps_learn`` (default 1e6).
        double_dqn: pick the bootstrap action with the online network (default True).
        prioritized_replay: sample sequences by priority (default True).
        pri_alpha: priority exponent (default 0.6).
        pri_beta_init, pri_beta_final, pri_beta_steps: importance-sampling exponent,
            linear over ``pri_beta_steps`` env steps (defaults 0.9, 0.9, 50e6).
        pri_eta: weight of the max in ``eta * max + (1 - eta) * mean`` of a sequence's
            absolute TD errors (default 0.9).
        default_priority: priority of sequences before any is known; ``None`` (default)
            uses ``delta_clip``, or 1.
        input_priorities: give new sequences priorities computed from the Q-values
            recorded while sampling (the agent's ``agent_info.q``), instead of the running
            max priority (default True).
        input_priority_shift: sequence starts back from the new ones that those priorities
            apply to; ``None`` (default) uses ``warmup_T // store_rnn_state_interval``, the
            sequences whose trained steps are the new steps.
        value_scale_eps: ``eps`` of the value rescaling ``h(x) = sign(x)(sqrt(|x| + 1) - 1)
            + eps x`` applied to targets; ``None`` disables rescaling (default 1e-3).
        ReplayBufferCls: replay buffer class; ``None`` (default) picks one by
            ``rlpyt.algos.dqn.r2d1_replay`` (frames for uint8 image stacks).  It receives
            the keywords of ``PrioritizedSequenceReplayBuffer`` (or the uniform one).
        updates_per_sync: asynchronous runs: optimizer iterations between publishing
            parameters to the samplers (default 1).
        bootstrap_timelimit: steps whose n-step window ends in a time-limit truncation
            (``env_info.timeout``) are left out of the loss instead of being treated as
            terminal (default True).
    """

    opt_info_fields = tuple(OptInfo._fields)
    OptInfoCls = OptInfo

    def __init__(
        self,
        discount: float = 0.997,
        batch_T: int = 80,
        batch_B: int = 64,
        warmup_T: int = 40,
        store_rnn_state_interval: int = 40,
        min_steps_learn: int = int(1e5),
        delta_clip: float | None = None,
        replay_size: int = int(1e6),
        replay_ratio: float = 1,
        target_update_tau: float = 1,
        target_update_interval: int = 2500,
        n_step_return: int = 5,
        learning_rate: float = 1e-4,
        OptimCls=torch.optim.Adam,
        optim_kwargs: dict | None = None,
        initial_optim_state_dict: dict | None = None,
        clip_grad_norm: float | None = 80.0,
        eps_steps: int = int(1e6),
        double_dqn: bool = True,
        prioritized_replay: bool = True,
        pri_alpha: float = 0.6,
        pri_beta_init: float = 0.9,
        pri_beta_final: float = 0.9,
        pri_beta_steps: int = int(50e6),
        pri_eta: float = 0.9,
        default_priority: float | None = None,
        input_priorities: bool = True,
        input_priority_shift: int | None = None,
        value_scale_eps: float | None = 1e-3,
        ReplayBufferCls=None,
        updates_per_sync: int = 1,
        bootstrap_timelimit: bool = True,
    ):
        for name, value, low in (("batch_T", batch_T, 1), ("batch_B", batch_B, 1),
                                 ("warmup_T", warmup_T, 0),
                                 ("store_rnn_state_interval", store_rnn_state_interval, 0)):
            if isinstance(value, bool) or int(value) != value or value < low:
                raise ValueError(f"R2D1: {name}={value!r} is invalid; expected an integer "
                                 f">= {low}")
        if not 0 <= pri_eta <= 1:
            raise ValueError(f"R2D1: pri_eta={pri_eta!r} is invalid; expected a number in "
                             f"[0, 1]")
        if value_scale_eps is not None and not value_scale_eps >= 0:
            raise ValueError(f"R2D1: value_scale_eps={value_scale_eps!r} is invalid; expected "
                             f"None or a number >= 0")
        if input_priority_shift is not None and (
                int(input_priority_shift) != input_priority_shift or input_priority_shift < 0):
            raise ValueError(f"R2D1: input_priority_shift={input_priority_shift!r} is invalid; "
                             f"expected None or an integer >= 0")
        save__init__args(locals(), subclass_only=True)
        super().__init__(
            discount=discount, batch_size=int(batch_B) * int(batch_T),
            min_steps_learn=min_steps_learn, delta_clip=delta_clip, replay_size=replay_size,
            replay_ratio=replay_ratio, target_update_tau=target_update_tau,
            target_update_interval=target_update_interval, n_step_return=n_step_return,
            learning_rate=learning_rate, OptimCls=OptimCls, optim_kwargs=optim_kwargs,
            initial_optim_state_dict=initial_optim_state_dict, clip_grad_norm=clip_grad_norm,
            eps_steps=eps_steps, double_dqn=double_dqn, prioritized_replay=prioritized_replay,
            pri_alpha=pri_alpha, pri_beta_init=pri_beta_init, pri_beta_final=pri_beta_final,
            pri_beta_steps=pri_beta_steps, default_priority=default_priority,
            ReplayBufferCls=ReplayBufferCls, updates_per_sync=updates_per_sync,
            bootstrap_timelimit=bootstrap_timelimit,
        )
        self._update_credit = 0.0

    # ---- set-up ------------------------------------------------------------------------
    @property
    def rnn_state_interval(self) -> int:
        """Steps between possible sequence starts (1 when no states are stored)."""
        return max(self.store_rnn_state_interval, 1)

    def _setup(self, agent, n_itr, batch_spec, mid_batch_reset, examples, world_size):
        if examples is None:
            raise ValueError("R2D1.initialize needs the sampler's examples to build its "
                             "replay buffer (got examples=None)")
        if "prev_rnn_state" not in getattr(examples["agent_info"], "_fields", ()):
            raise TypeError(
                f"R2D1 needs a recurrent agent that records prev_rnn_state in its agent_info "
                f"(e.g. R2d1Agent); {type(agent).__name__} records "
                f"{getattr(examples['agent_info'], '_fields', None)}")
        if self.prioritized_replay and self.input_priorities and \
                batch_spec.T <= self.n_step_return:
            raise ValueError(
                f"R2D1: input_priorities need n-step targets inside each sampler batch, so "
                f"the sampler's batch_T={batch_spec.T} must exceed "
                f"n_step_return={self.n_step_return}")
        self.agent = agent
        self.n_itr = n_itr
        self.batch_spec = batch_spec
        self.mid_batch_reset = mid_batch_reset
        self.world_size = world_size
        self.sampler_bs = batch_spec.size
        self.itr_bs = batch_spec.size * world_size  # Env steps per iteration, all ranks.
        self.updates_per_itr = self.replay_ratio * self.sampler_bs / self.batch_size
        self.min_itr_learn = int(self.min_steps_learn // self.itr_bs)
        eps_itr_max = max(self.min_itr_learn, int(self.eps_steps // self.itr_bs))
        agent.set_epsilon_itr_min_max(self.min_itr_learn, eps_itr_max)

    def make_replay_buffer(self, examples, batch_spec, async_: bool = False):
        """The sequence replay buffer (see ``rlpyt.algos.dqn.r2d1_replay``)."""
        env_info = examples["env_info"]
        self._store_timeout = self.bootstrap_timelimit and \
            "timeout" in getattr(env_info, "_fields", ())
        fields = dict(observation=examples["observation"], action=examples["action"],
                      reward=examples["reward"], done=examples["done"],
                      prev_rnn_state=examples["agent_info"].prev_rnn_state)
        if self._store_timeout:
            example = SamplesToBufferRnnTl(**fields, timeout=env_info.timeout)
        else:
            example = SamplesToBufferRnn(**fields)
        ReplayCls = self.ReplayBufferCls or r2d1_replay_buffer_class(
            examples["observation"], self.prioritized_replay, async_)
        steps_per_env = self.replay_size // batch_spec.B
        steps_per_env -= steps_per_env % self.rnn_state_interval
        kwargs = dict(size=steps_per_env * batch_spec.B, B=batch_spec.B,
                      discount=self.discount, n_step_return=self.n_step_return,
                      batch_T=self.batch_T, rnn_state_interval=self.store_rnn_state_interval,
                      warmup_T=self.warmup_T)
        if self.prioritized_replay:
            default = self.default_priority
            if default is None:
                default = self.delta_clip if self.delta_clip is not None else 1.0
            shift = self.input_priority_shift
            if shift is None:
                shift = self.warmup_T // self.rnn_state_interval
            kwargs.update(alpha=self.pri_alpha, beta=self.pri_beta_init,
                          default_priority=default, input_priorities=self.input_priorities,
                          input_priority_shift=shift)
        return ReplayCls(example, **kwargs)

    def samples_to_buffer(self, samples):
        """The fields of a sampler batch that the replay stores (with input priorities)."""
        fields = dict(observation=samples.env.observation, action=samples.agent.action,
                      reward=samples.env.reward, done=samples.env.done,
                      prev_rnn_state=samples.agent.agent_info.prev_rnn_state)
        if self._store_timeout:
            to_buffer = SamplesToBufferRnnTl(**fields, timeout=samples.env.env_info.timeout)
        else:
            to_buffer = SamplesToBufferRnn(**fields)
        if self.prioritized_replay and self.input_priorities:
            return PrioritiesSamplesToBuffer(
                priorities=self.compute_input_priorities(samples), samples=to_buffer)
        return to_buffer

    # ---- training -------------------------------------------------------------------------
    def optimize_agent(self, itr, samples=None, sampler_itr=None):
        """Store ``samples`` (if given), then take this iteration's gradient steps.

        Returns ``OptInfo`` lists with one entry per gradient step.
        """
        itr = itr if sampler_itr is None else sampler_itr
        if samples is not None:
            self.replay_buffer.append_samples(self.samples_to_buffer(samples))
        opt_info = OptInfo(*([] for _ in OptInfo._fields))
        if itr < self.min_itr_learn or not self._replay_ready():
            return opt_info
        if self.prioritized_replay:
            self.replay_buffer.set_beta(self.pri_beta_at(itr))
        if self.async_:  # One gradient step per call; the runner holds the replay ratio.
            n_updates = 1
        else:
            self._update_credit += self.updates_per_itr
            n_updates = int(self._update_credit)
            self._update_credit -= n_updates
        records = []  # Tensors, read once at the end (no device sync per update).
        for _ in range(n_updates):
            batch = self.replay_buffer.sample_batch(self.batch_B)
            loss, td_abs, valid, priorities = self.loss(buffer_to(batch, self.agent.device))
            self.optimizer.zero_grad(set_to_none=True)
            backward(loss)
            grad_norm = self._clip_gradients()
            self._optimizer_step()
            if self.prioritized_replay:
                self.replay_buffer.update_batch_priorities(priorities.cpu())
            records.append(torch.stack([loss.detach(), grad_norm, valid_mean(td_abs, valid),
                                        priorities.mean()]))
            self.update_counter += 1
            if self.update_counter % self.target_update_interval == 0:
                self.agent.update_target(self.target_update_tau)
        if records:
            for values, column in zip(opt_info, torch.stack(records).T.tolist()):
                values.extend(column)
        self._after_optimize()
        return opt_info

    def loss(self, samples):
        """``(loss, td_abs [batch_T, batch_B], valid [batch_T, batch_B], priorities
        [batch_B])`` for a replayed batch of sequences on the agent's device."""
        wT, bT, n = self.warmup_T, self.batch_T, self.n_step_return
        action, episode_start = self.sequence_actions_and_starts(samples)
        inputs = (samples.all_observation, _blank(samples.all_action, episode_start),
                  _blank(samples.all_reward, episode_start))
        init_rnn_state = samples.init_rnn_state
        if init_rnn_state is not None:  # Stored per sequence [B, N, H]; the model takes [N, B, H].
            init_rnn_state = buffer_method(
                buffer_method(init_rnn_state, "transpose", 0, 1), "contiguous")
        rnn_state = init_rnn_state
        if wT > 0:  # Burn-in: the recurrent state only, no gradients.
            with torch.no_grad():
                rnn_state = burn_in(self.agent, tuple(x[:wT] for x in inputs), rnn_state,
                                    episode_start[:wT])
        q = unroll(self.agent, tuple(x[wT:] for x in inputs), rnn_state, episode_start[wT:])
        target_q = unroll(self.agent.target, inputs, init_rnn_state, episode_start)
        q_at_action = select_at_indexes(action[wT:], q[:bT])
        with torch.no_grad():
            next_target_q = target_q[wT + n:wT + n + bT]
            if self.double_dqn:
                next_action = q[n:n + bT].argmax(dim=-1)
                next_value = select_at_indexes(next_action, next_target_q)
            else:
                next_value = next_target_q.max(dim=-1).values
            y = rescaled_n_step_target(samples.return_[wT:], samples.done_n[wT:], next_value,
                                       self.discount ** n, self.value_scale_eps)
        delta = y - q_at_action
        losses = huber_loss(delta, self.delta_clip)
        if self.prioritized_replay:
            losses = losses * samples.is_weights.unsqueeze(0)
        valid = self.valid_mask(samples)[wT:]
        td_abs = delta.detach().abs()
        if self.delta_clip is not None:
            td_abs = td_abs.clamp(max=self.delta_clip)
        priorities = sequence_priorities(td_abs, valid, self.pri_eta)
        return valid_mean(losses, valid), td_abs, valid, priorities

    def sequence_actions_and_starts(self, samples):
        """Actions taken at the ``warmup_T + batch_T`` replayed steps, and episode starts
        ``[L, B]``.  From the R2D1 replay's extra fields, or (for other replay classes)
        rebuilt from ``all_action`` and ``done``, where a start at the first step is unknown."""
        trained_T = self.warmup_T + self.batch_T
        if "episode_start" in samples._fields:
            return samples.action, samples.episode_start.bool()
        episode_start = torch.zeros_like(samples.all_reward, dtype=torch.bool)
        episode_start[1:trained_T + 1] = samples.done.bool()
        return samples.all_action[1:trained_T + 1], episode_start

    def valid_mask(self, samples) -> torch.Tensor:
        """``[warmup_T + batch_T, B]`` float: 0 for steps left out of the loss.

        Without mid-batch resets, steps after a sequence's first done (wait-reset filler);
        with time-limit bootstrapping, steps whose n-step window ends in a truncation.
        """
        done = samples.done
        valid = torch.ones_like(done, dtype=torch.float32)
        if not self.mid_batch_reset:
            valid = valid_from_done(done.float())
        if "timeout_n" in samples._fields:
            valid = valid * (1 - samples.timeout_n.float())
        return valid

    # ---- input priorities ---------------------------------------------------------------
    @torch.no_grad()
    def compute_input_priorities(self, samples) -> np.ndarray:
        """Priorities ``[T, B]`` for the sequences of a new sampler batch, one per step.

        The replay uses the entries of the steps that start rows (every
        ``store_rnn_state_interval``-th step; where they fall in a batch depends on the
        steps appended before, so every step gets one).  TD errors come from the
        Q-values the agent recorded while sampling (its online network, which also gives
        the bootstrap value ``max_a q``) with this algorithm's n-step value-rescaled
        targets, for the steps whose n-step window lies inside the batch.  A start at
        step ``t`` gives the priority of the steps trained by the sequence that the
        replay assigns it to (``input_priority_shift`` rows back): ``t + warmup_T - shift
        * interval`` and the next ``batch_T``; where none of those is in the batch, the
        priority of the env's whole batch.
        """
        n = self.n_step_return
        q = samples.agent.agent_info.q.float()
        done = samples.env.done
        T = done.shape[0]
        return_, done_n = discount_return_n_step(samples.env.reward.float(), done.float(), n,
                                                 self.discount)
        y = rescaled_n_step_target(return_[:T - n], done_n[:T - n], q[n:].max(dim=-1).values,
                                   self.discount ** n, self.value_scale_eps)
        td_abs = (y - select_at_indexes(samples.agent.action[:T - n], q[:T - n])).abs()
        if self.delta_clip is not None:
            td_abs = td_abs.clamp(max=self.delta_clip)
        valid = self._input_valid(samples)[:T - n]
        windows = self._input_windows(T, T - n).to(td_abs.dtype)  # [T, T - n]
        window_valid = windows.unsqueeze(-1) * valid  # [T, T - n, B]
        priorities = sequence_priorities(td_abs.expand_as(window_valid), window_valid,
                                         self.pri_eta, dim=1)
        batch_priorities = sequence_priorities(td_abs, valid, self.pri_eta)  # [B]
        empty = window_valid.sum(dim=1) == 0
        priorities = torch.where(empty, batch_priorities.expand_as(priorities), priorities)
        return priorities.cpu().numpy()

    def _input_valid(self, samples) -> torch.Tensor:
        done = samples.env.done
        valid = torch.ones_like(done, dtype=torch.float32)
        if not self.mid_batch_reset:
            valid = valid_from_done(done.float())
        if self._store_timeout:
            n = self.n_step_return
            timeout_n = first_end_is_timeout(done.bool(), samples.env.env_info.timeout.bool(), n)
            valid[:len(timeout_n)] *= 1 - timeout_n.float()
        return valid

    def _input_windows(self, T: int, length: int) -> torch.Tensor:
        """``[T, length]`` bool: step ``t`` is trained by the sequence of a start at ``s``."""
        interval = self.rnn_state_interval
        shift = self.replay_buffer.input_priority_shift
        first = torch.arange(T) + (self.warmup_T - shift * interval)
        t = torch.arange(length)
        return (t >= first[:, None]) & (t < first[:, None] + self.batch_T)

    # ---- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return dict(super().state_dict(), update_credit=self._update_credit)

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self._update_credit = float(state_dict.get("update_credit", 0.0))

