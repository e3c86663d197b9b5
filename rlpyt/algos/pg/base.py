"""What A2C and PPO share: returns and advantages from a batch, the optimizer, a gradient step.

The losses live in ``a2c.py`` and ``ppo.py``, each on one screen, built from ``rlpyt.algos.losses``.
"""

from __future__ import annotations

import math
from collections import namedtuple

import torch

from rlpyt.agents.base import AgentInputs
from rlpyt.algos import losses
from rlpyt.algos.base import RlAlgorithm
from rlpyt.algos.optim import clip_grad_norm, direct_step_for, make_optimizer
from rlpyt.algos.pg.reward_scaling import RewardScaler
from rlpyt.models.running_mean_std import RunningMeanStdModel
from rlpyt.utils.buffer import buffer_method, buffer_to

__all__ = ["OptInfo", "PolicyGradientAlgo", "linear_decay"]

OptInfo = namedtuple("OptInfo", ["loss", "gradNorm", "entropy", "perplexity"])


def linear_decay(itr: int, n_itr: int) -> float:
    """Factor falling linearly from 1 at ``itr=0`` to 0 at ``itr=n_itr`` (then staying 0)."""
    return max(0.0, (n_itr - itr) / n_itr)


def _numpy_views(*tensors):
    """numpy views of CPU tensors that need no gradient (None passes through), or None
    if any tensor is elsewhere."""
    for t in tensors:
        if t is not None and (not isinstance(t, torch.Tensor) or not t.is_cpu or t.requires_grad):
            return None
    return tuple(None if t is None else t.numpy() for t in tensors)


def check_in_range(owner: str, name: str, value, low, high, low_open: bool = False) -> None:
    """Raise a ValueError naming the argument unless ``low (<|<=) value <= high``."""
    ok = (value > low if low_open else value >= low) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ValueError(f"{owner}: {name}={value!r} must lie in {bracket}{low}, {high}]")


class PolicyGradientAlgo(RlAlgorithm):
    """Base of on-policy actor-critic algorithms trained on the latest ``[T, B]`` batch.

    Subclasses set the hyperparameters in ``__init__`` (``discount``, ``gae_lambda``,
    ``learning_rate``, ``OptimCls``, ``optim_kwargs``, ``clip_grad_norm``,
    ``initial_optim_state_dict``, ``normalize_advantage``, optionally
    ``normalize_returns``) and implement ``optimize_agent``.  The sampler records
    ``bootstrap_value`` and ``timeout_value`` because ``bootstrap_value = True``.
    """

    bootstrap_value = True
    opt_info_fields = tuple(OptInfo._fields)
    lr_scheduler = None
    return_rms: RunningMeanStdModel | None = None
    reward_scaler: RewardScaler | None = None

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
        if int(n_itr) != n_itr or n_itr < 1:
            raise ValueError(f"{type(self).__name__}.initialize: n_itr={n_itr!r} must be >= 1")
        self.agent = agent
        self.n_itr = int(n_itr)
        self.batch_spec = batch_spec
        self.mid_batch_reset = mid_batch_reset
        self.world_size = world_size
        self._batch_size = batch_spec.size
        # Running statistics of the returns (a scalar), on the agent's device: under
        # SyncRl their update is an all-reduce, which NCCL does on CUDA tensors only.
        self.return_rms = (RunningMeanStdModel(()).to(agent.device)
                           if getattr(self, "normalize_returns", False) else None)
        self.reward_scaler = (RewardScaler(self.discount, agent.device)
                              if getattr(self, "normalize_rewards", False) else None)
        self.optim_initialize(rank)

    def optim_initialize(self, rank: int = 0) -> None:
        """Optimizer over ``agent.parameters()`` (plus the LR schedule, if any)."""
        self.rank = rank
        self._params = list(self.agent.parameters())  # walked once, not every step
        self.optimizer = make_optimizer(
            self.OptimCls, self._params, self.learning_rate, self.optim_kwargs
        )
        # Fused Adam's kernel called directly; RMSprop compiled when the run is long
        # enough to repay the compile (one gradient step per iteration counted: a floor).
        self._direct_step = direct_step_for(
            self.optimizer, planned_work=float(getattr(self, "n_itr", 0))
            * sum(p.numel() for p in self._params))
        self.lr_scheduler = self.make_lr_scheduler()
        if self.initial_optim_state_dict is not None:
            self.load_optim_state_dict(self.initial_optim_state_dict)

    def make_lr_scheduler(self):
        """A ``torch.optim.lr_scheduler`` stepped once per ``optimize_agent``, or None.

        With ``linear_lr_schedule`` (PPO, Impala) the learning rate falls linearly from
        ``learning_rate`` to 0 over the run's ``n_itr`` iterations (``linear_decay``).
        """
        if not getattr(self, "linear_lr_schedule", False):
            return None
        n_itr = self.n_itr
        return torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_lambda=lambda itr: linear_decay(itr, n_itr)
        )

    def optim_state_dict(self) -> dict:
        """The optimizer's state dict, or ``{"optimizer", "lr_scheduler"}`` with a schedule."""
        if self.lr_scheduler is None:
            return self.optimizer.state_dict()
        return {
            "optimizer": self.optimizer.state_dict(),
            "lr_scheduler": self.lr_scheduler.state_dict(),
        }

    def load_optim_state_dict(self, state_dict: dict) -> None:
        """Accepts either form ``optim_state_dict`` returns (a bare optimizer state too)."""
        if "param_groups" in state_dict:  # a bare torch optimizer state dict
            self.optimizer.load_state_dict(state_dict)
            return
        if "optimizer" not in state_dict:
            raise KeyError(
                f"{type(self).__name__}.load_optim_state_dict: expected a torch optimizer state "
                f"dict or {{'optimizer', 'lr_scheduler'}}, got keys {sorted(state_dict)}"
            )
        self.optimizer.load_state_dict(state_dict["optimizer"])
        if self.lr_scheduler is not None and state_dict.get("lr_scheduler") is not None:
            self.lr_scheduler.load_state_dict(state_dict["lr_scheduler"])

    def state_dict(self) -> dict:
        """As ``RlAlgorithm``'s, with the returns' statistics under ``normalize_returns``."""
        state = super().state_dict()
        if self.return_rms is not None:
            state["return_rms"] = self.return_rms.state_dict()
        if self.reward_scaler is not None:
            state["reward_scaler"] = self.reward_scaler.state_dict()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for key, part, option, what in (
                ("return_rms", self.return_rms, "normalize_returns", "return normalization"),
                ("reward_scaler", self.reward_scaler, "normalize_rewards", "reward scaling")):
            if part is None:
                continue
            if key not in state_dict:
                raise KeyError(f"{type(self).__name__}.load_state_dict: {option}=True but the "
                               f"state has no {key!r} (saved by a run without {what}?)")
            part.load_state_dict(state_dict[key])

    # ---- from samples to training targets ------------------------------------------
    def update_obs_normalizer(self, samples) -> None:
        """Update the agent's observation normaliser (if its model has one) with the batch.

        Under DistributedDataParallel every rank calls this, so the all-reduce inside
        ``RunningMeanStdModel`` never waits on a rank that skipped it.
        """
        update = getattr(self.agent, "update_obs_rms", None)
        if update is not None:
            update(samples.env.observation)

    def process_returns(self, samples):
        """Returns, advantages and the valid mask for a ``[T, B]`` batch.

        Truncated episodes (``env_info.timeout``) bootstrap from the recorded
        ``timeout_value`` = V(final observation): its discounted value is added to the
        reward of the truncated step, while ``done`` still cuts the trace there.

        Returns ``(return_, advantage, valid)``; ``valid`` is None for mid-batch-reset
        collection, else 1 up to and including each env's first done in the batch.
        """
        reward = samples.env.reward
        done = samples.env.done
        value = samples.agent.agent_info.value
        bootstrap_value = getattr(samples.agent, "bootstrap_value", None)
        if bootstrap_value is None:
            raise ValueError(
                f"{type(self).__name__}: samples.agent has no bootstrap_value; the sampler must "
                f"record AgentSamplesBsv (it does when algo.bootstrap_value is True)"
            )
        timeout = getattr(samples.env.env_info, "timeout", None)
        timeout_value = None
        if timeout is not None:
            timeout_value = getattr(samples.agent, "timeout_value", None)
            if timeout_value is None:
                raise ValueError(
                    f"{type(self).__name__}: env_info has a timeout field but samples.agent has "
                    f"no timeout_value to bootstrap truncated episodes from"
                )
        # Sampler batches are CPU tensors over numpy memory: the few dozen small ops below
        # cost a fraction of torch's dispatch on numpy views (same float32 arithmetic).
        arrays = _numpy_views(reward, done, value, bootstrap_value, timeout, timeout_value)
        if arrays is not None:
            reward, done, value, bootstrap_value, timeout, timeout_value = arrays
        valid = None if self.mid_batch_reset else losses.valid_from_done(done)
        if self.reward_scaler is not None:  # before bootstrapping: values are in its units
            reward = self.reward_scaler(reward, done, valid)
        if self.return_rms is not None:  # the value head predicts normalised returns
            value, bootstrap_value, timeout_value = (
                self.denormalized_value(v) for v in (value, bootstrap_value, timeout_value))
        if timeout is not None:
            reward = losses.timeout_bootstrapped_reward(reward, timeout, timeout_value,
                                                        self.discount)
        advantage, return_ = losses.generalized_advantage_estimation(
            reward, value, done, bootstrap_value, self.discount, self.gae_lambda
        )
        if arrays is not None:
            return_, advantage = torch.from_numpy(return_), torch.from_numpy(advantage)
            valid = None if valid is None else torch.from_numpy(valid)
        if self.normalize_advantage:
            advantage = self.normalized(advantage, valid)
        if self.return_rms is not None:
            return_ = self.normalized_return(return_, valid)
        return return_, advantage, valid

    def denormalized_value(self, value):
        """A value head's output (normalised returns) in return units, with the statistics
        of the returns so far: ``value * std + mean`` (numpy or torch; None passes)."""
        if value is None:
            return None
        return value * float(self.return_rms.std) + float(self.return_rms.mean)

    def normalized_return(self, return_: torch.Tensor, valid: torch.Tensor | None):
        """The value head's regression target: ``return_`` normalised by the statistics
        of all returns so far, this batch's valid ones included (Sample Factory's and
        rl_games' return normalization; under SyncRl every rank folds in every rank's)."""
        device = self.return_rms.mean.device
        chosen = return_.reshape(-1) if valid is None else return_[valid > 0]
        self.return_rms.update(chosen.to(device))
        return self.return_rms(return_.to(device)).to(return_.device)

    @staticmethod
    def normalized(advantage: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """Advantage scaled to mean 0, std 1 over the valid entries."""
        chosen = advantage.reshape(-1) if valid is None else advantage[valid > 0]
        mean, std = chosen.mean(), chosen.std(correction=0)
        return (advantage - mean) / (std + 1e-8)

    def agent_inputs(self, samples) -> AgentInputs:
        """The agent's call inputs for the whole batch, on the agent's device."""
        inputs = AgentInputs(
            observation=samples.env.observation,
            prev_action=samples.agent.prev_action,
            prev_reward=samples.env.prev_reward,
        )
        if self.agent.device.type == "cpu":  # sampler batches are CPU tensors already
            return inputs
        return buffer_to(inputs, self.agent.device)

    def to_agent_device(self, *tensors):
        """The tensors (None passes through) on the agent's device."""
        device = self.agent.device
        if device.type == "cpu" and all(t is None or t.is_cpu for t in tensors):
            return tensors
        return tuple(None if t is None else t.to(device) for t in tensors)

    def initial_rnn_state(self, samples):
        """Recurrent state at the batch's first step as ``[B, N, H]`` (None if feed-forward)."""
        if not self.agent.recurrent:
            return None
        return buffer_to(samples.agent.agent_info.prev_rnn_state[0], self.agent.device)

    @staticmethod
    def rnn_state_for_model(state_bnh):
        """``[B, N, H]`` (batch-major, as stored) -> ``[N, B, H]`` (as the model takes)."""
        return buffer_method(buffer_method(state_bnh, "transpose", 0, 1), "contiguous")

    # ---- minibatches (PPO, APPO) -------------------------------------------------------
    def check_surrogate_args(self, optional: tuple[str, ...] = ()) -> None:
        """Validate the clipped surrogate's keywords: ``epochs`` and ``minibatches``
        integers >= 1, ``ratio_clip`` and the ``optional`` ones (unless None) > 0."""
        name = type(self).__name__
        for key in ("minibatches", "epochs"):
            value = getattr(self, key)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name}: {key}={value!r} must be an integer >= 1")
        check_in_range(name, "ratio_clip", self.ratio_clip, 0, float("inf"), low_open=True)
        for key in optional:
            if getattr(self, key) is not None:
                check_in_range(name, key, getattr(self, key), 0, float("inf"), low_open=True)

    def check_minibatches(self, agent, batch_spec) -> None:
        """Minibatches must split the batch: over B for recurrent agents, else over T * B."""
        if agent.recurrent:
            if batch_spec.B % self.minibatches != 0:
                divisors = [m for m in range(1, batch_spec.B + 1) if batch_spec.B % m == 0]
                raise ValueError(
                    f"{type(self).__name__}: minibatches={self.minibatches} must divide "
                    f"batch_B={batch_spec.B} for a recurrent agent (whole env sequences "
                    f"are minibatched over B); valid values: {divisors}"
                )
        elif self.minibatches > batch_spec.size:
            raise ValueError(
                f"{type(self).__name__}: minibatches={self.minibatches} exceeds the batch "
                f"size batch_T * batch_B = {batch_spec.size}; valid values: 1 to "
                f"{batch_spec.size}"
            )

    def minibatch_indexes(self, T: int, B: int):
        """Shuffled index sets: env columns (recurrent) or flat ``t + T * b`` steps.

        With one minibatch the only set is ``None``, the whole batch in place: the loss
        is a mean over its entries, so their order does not matter and no gather is needed.
        """
        if self.minibatches == 1:
            return (None,)
        n = B if self.agent.recurrent else T * B
        order = torch.randperm(n, device=self.agent.device)
        return order.tensor_split(self.minibatches)

    def select_minibatch(self, batch, init_rnn_state, idxs):
        """The minibatch ``idxs`` (from ``minibatch_indexes``) and its initial RNN state."""
        if init_rnn_state is None:
            return (batch if idxs is None else batch[idxs]), None
        if idxs is not None:
            batch, init_rnn_state = batch[:, idxs], init_rnn_state[idxs]
        return batch, self.rnn_state_for_model(init_rnn_state)

    # ---- loss terms --------------------------------------------------------------------
    def value_loss(self, value: torch.Tensor, return_: torch.Tensor, valid) -> torch.Tensor:
        """``value_loss_coeff * mean(0.5 (V - R)^2)`` over the valid entries."""
        return self.value_loss_coeff * losses.value_loss(value, return_, valid)

    # ---- one gradient step -------------------------------------------------------------
    def check_finite(self, itr: int, **terms: torch.Tensor) -> None:
        """Raise if any loss term is NaN/inf, naming the term, the iteration and the step."""
        values = torch.stack([t.detach().reshape(()) for t in terms.values()])
        if bool(torch.isfinite(values).all()):
            return
        for name, value in zip(terms, values.tolist()):
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"{type(self).__name__}: loss term {name!r} is {value} at itr {itr} "
                    f"(gradient step {self.update_counter}); check the rewards and observations "
                    f"for NaN/inf, or lower learning_rate={self.learning_rate}"
                )

    def gradient_step(self, loss: torch.Tensor, as_tensor: bool = False):
        """Backprop ``loss``, clip the gradient norm, step; returns the pre-clip norm.

        ``as_tensor=True`` returns the norm as a tensor (no device sync per step).
        """
        for param in self._params:  # optimizer.zero_grad(), minus its profiler context
            param.grad = None
        loss.backward()
        grad_norm = clip_grad_norm(self._params, self.clip_grad_norm)
        direct = getattr(self, "_direct_step", None)
        if direct is not None and direct.optimizers == [self.optimizer]:
            direct.step()  # fused Adam's kernel without Adam.step's per-call bookkeeping
        else:
            self.optimizer.step()
        self.update_counter += 1
        return grad_norm if as_tensor else float(grad_norm)

    def check_common_args(self) -> None:
        """Validate the keywords every policy-gradient algorithm has."""
        name = type(self).__name__
        check_in_range(name, "discount", self.discount, 0, 1)
        check_in_range(name, "gae_lambda", self.gae_lambda, 0, 1)
        check_in_range(name, "learning_rate", self.learning_rate, 0, float("inf"), low_open=True)
        if self.clip_grad_norm is not None:
            check_in_range(
                name, "clip_grad_norm", self.clip_grad_norm, 0, float("inf"), low_open=True
            )
