"""Proximal policy optimization (PPO) with the clipped surrogate objective."""

from __future__ import annotations

from collections import namedtuple

import torch

from rlpyt.algos.pg.base import PolicyGradientAlgo, check_in_range, linear_decay
from rlpyt.utils.buffer import buffer_to
from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.quick_args import save__init__args
from rlpyt.utils.tensor import valid_mean

__all__ = ["PPO", "PpoBatch", "PpoOptInfo"]

PpoOptInfo = namedtuple(
    "PpoOptInfo",
    [
        "loss",
        "gradNorm",
        "entropy",
        "perplexity",
        "piLoss",
        "valueLoss",
        "entropyLoss",
        "approxKl",
        "ratioClipFraction",
        "ratioClip",
        "learningRate",
    ],
)
# Everything a minibatch needs, indexed together over [T, B] (None fields are skipped).
PpoBatch = namedarraytuple(
    "PpoBatch",
    ["agent_inputs", "action", "return_", "advantage", "valid", "old_log_likelihood", "old_value"],
)


class PPO(PolicyGradientAlgo):
    """Proximal Policy Optimization (Schulman et al. 2017, "Proximal Policy Optimization
    Algorithms") with GAE (Schulman et al. 2016, "High-Dimensional Continuous Control Using
    Generalized Advantage Estimation").

    Each ``optimize_agent`` runs ``epochs`` passes over the batch in ``minibatches``
    shuffled minibatches, minimising::

        ratio = pi(a|s) / pi_old(a|s)
        loss = -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))
               + value_loss_coeff * mean(0.5 (V(s) - R)^2) - entropy_loss_coeff * mean(H)

    Feed-forward agents shuffle single time steps over all ``T * B``; recurrent agents
    shuffle whole env columns (minibatches over ``B``), replaying each sequence from
    the recurrent state stored at the batch's first step.

    Args:
        discount: reward discount gamma (default 0.99).
        learning_rate: optimizer step size at the start of training (default 0.001).
        value_loss_coeff: weight of the value regression loss (default 1.).
        entropy_loss_coeff: weight of the entropy bonus (default 0.01).
        OptimCls: torch optimizer class (default ``torch.optim.Adam``).
        optim_kwargs: extra keyword arguments for ``OptimCls`` (default None: none).
        clip_grad_norm: maximum global gradient norm; None disables clipping (default 1.).
        initial_optim_state_dict: optimizer (and schedule) state to load at
            ``initialize``, as returned by ``optim_state_dict()`` (default None).
        gae_lambda: GAE lambda (default 1).
        minibatches: minibatches per epoch; must divide ``batch_B`` for recurrent agents
            (default 4).
        epochs: passes over each batch (default 4).
        ratio_clip: the clipping range eps of the probability ratio (default 0.1).
        linear_lr_schedule: anneal the learning rate and ``ratio_clip`` linearly to 0
            over the run: a ``LambdaLR`` stepped once per ``optimize_agent`` call
            (iteration), reaching 0 after ``n_itr`` iterations.  Its state is part of
            ``optim_state_dict()``, so a resumed run continues the schedule (default True).
        normalize_advantage: scale advantages to mean 0, std 1 over the valid entries of
            each batch, once per batch (default False).
        clip_vf_loss: also clip the value update around the sampled value estimate,
            taking the larger of the clipped and unclipped errors (default False).
        vf_clip: range of that value clip; None uses the current ``ratio_clip``
            (default None; only used with ``clip_vf_loss``).
        target_kl: stop the remaining epochs of this batch before any minibatch step
            whose estimated KL(pi_old || pi) exceeds this value; None never stops early
            (default None).
    """

    opt_info_fields = tuple(PpoOptInfo._fields)

    def __init__(
        self,
        discount: float = 0.99,
        learning_rate: float = 0.001,
        value_loss_coeff: float = 1.0,
        entropy_loss_coeff: float = 0.01,
        OptimCls: type[torch.optim.Optimizer] = torch.optim.Adam,
        optim_kwargs: dict | None = None,
        clip_grad_norm: float | None = 1.0,
        initial_optim_state_dict: dict | None = None,
        gae_lambda: float = 1,
        minibatches: int = 4,
        epochs: int = 4,
        ratio_clip: float = 0.1,
        linear_lr_schedule: bool = True,
        normalize_advantage: bool = False,
        clip_vf_loss: bool = False,
        vf_clip: float | None = None,
        target_kl: float | None = None,
    ):
        save__init__args(locals())
        self.optim_kwargs = dict(optim_kwargs or {})
        self.check_common_args()
        for name in ("minibatches", "epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"PPO: {name}={value!r} must be an integer >= 1")
        check_in_range("PPO", "ratio_clip", ratio_clip, 0, float("inf"), low_open=True)
        for name in ("vf_clip", "target_kl"):
            if getattr(self, name) is not None:
                check_in_range("PPO", name, getattr(self, name), 0, float("inf"), low_open=True)

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
        self.check_minibatches(agent, batch_spec)
        super().initialize(agent, n_itr, batch_spec, mid_batch_reset, examples, world_size, rank)
        self._batch_size = batch_spec.size // self.minibatches

    def check_minibatches(self, agent, batch_spec) -> None:
        """Minibatches must split the batch: over B for recurrent agents, else over T * B."""
        if agent.recurrent:
            if batch_spec.B % self.minibatches != 0:
                divisors = [m for m in range(1, batch_spec.B + 1) if batch_spec.B % m == 0]
                raise ValueError(
                    f"PPO: minibatches={self.minibatches} must divide batch_B={batch_spec.B} for "
                    f"a recurrent agent (whole env sequences are minibatched over B); valid "
                    f"values: {divisors}"
                )
        elif self.minibatches > batch_spec.size:
            raise ValueError(
                f"PPO: minibatches={self.minibatches} exceeds the batch size batch_T * batch_B = "
                f"{batch_spec.size}; valid values: 1 to {batch_spec.size}"
            )

    def make_lr_scheduler(self):
        if not self.linear_lr_schedule:
            return None
        n_itr = self.n_itr
        return torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_lambda=lambda itr: linear_decay(itr, n_itr)
        )

    @property
    def current_ratio_clip(self) -> float:
        """``ratio_clip``, annealed with the learning rate under ``linear_lr_schedule``."""
        if self.lr_scheduler is None:
            return self.ratio_clip
        return self.ratio_clip * linear_decay(self.lr_scheduler.last_epoch, self.n_itr)

    def optimize_agent(self, itr: int, samples=None, sampler_itr: int | None = None):
        """``epochs`` x ``minibatches`` gradient steps; returns ``PpoOptInfo`` of lists."""
        self.update_obs_normalizer(samples)
        batch, init_rnn_state = self.make_batch(samples)
        ratio_clip = self.current_ratio_clip
        learning_rate = self.optimizer.param_groups[0]["lr"]
        T, B = samples.env.reward.shape[:2]
        step_terms, names = [], ()  # per gradient step: loss terms and grad norm, as tensors
        for _epoch in range(self.epochs):
            for idxs in self.minibatch_indexes(T, B):
                if init_rnn_state is None:
                    minibatch, rnn_state = batch[idxs % T, idxs // T], None
                else:
                    minibatch = batch[:, idxs]
                    rnn_state = self.rnn_state_for_model(init_rnn_state[idxs])
                terms = self.loss(minibatch, rnn_state, ratio_clip)
                if not bool(torch.isfinite(terms["loss"])):
                    self.check_finite(itr, pi_loss=terms["piLoss"], value_loss=terms["valueLoss"],
                                      entropy_loss=terms["entropyLoss"], loss=terms["loss"])
                if self.target_kl is not None and terms["approxKl"].item() > self.target_kl:
                    break  # the policy moved far enough on this batch
                terms["gradNorm"] = self.gradient_step(terms["loss"], as_tensor=True)
                names = tuple(terms)
                step_terms.append(torch.stack([v.detach().reshape(()) for v in terms.values()]))
            else:
                continue
            break
        return self.finish(self.make_opt_info(names, step_terms, ratio_clip, learning_rate))

    @staticmethod
    def make_opt_info(names, step_terms, ratio_clip, learning_rate) -> PpoOptInfo:
        """One ``PpoOptInfo`` of lists from the per-step tensors (a single conversion)."""
        opt_info = PpoOptInfo(*([] for _ in PpoOptInfo._fields))
        if step_terms:
            columns = torch.stack(step_terms).T.tolist()
            for name, values in zip(names, columns):
                getattr(opt_info, name).extend(values)
        opt_info.ratioClip.extend([ratio_clip] * len(step_terms))
        opt_info.learningRate.extend([learning_rate] * len(step_terms))
        return opt_info

    def loss(self, batch: PpoBatch, init_rnn_state, ratio_clip: float) -> dict:
        """The PPO loss and its terms on one minibatch."""
        if init_rnn_state is None:
            dist_info, value = self.agent(*batch.agent_inputs)
        else:
            dist_info, value, _ = self.agent(*batch.agent_inputs, init_rnn_state)
        dist, valid, advantage = self.agent.distribution, batch.valid, batch.advantage

        log_ratio = dist.log_likelihood(batch.action, dist_info) - batch.old_log_likelihood
        ratio = torch.exp(log_ratio)
        clipped_ratio = torch.clamp(ratio, 1 - ratio_clip, 1 + ratio_clip)
        pi_loss = -valid_mean(torch.min(ratio * advantage, clipped_ratio * advantage), valid)

        value_error = (value - batch.return_) ** 2
        if self.clip_vf_loss:
            vf_clip = ratio_clip if self.vf_clip is None else self.vf_clip
            clipped_value = batch.old_value + torch.clamp(
                value - batch.old_value, -vf_clip, vf_clip
            )
            value_error = torch.max(value_error, (clipped_value - batch.return_) ** 2)
        value_loss = self.value_loss_coeff * valid_mean(0.5 * value_error, valid)

        entropy = dist.mean_entropy(dist_info, valid)
        entropy_loss = -self.entropy_loss_coeff * entropy
        loss = pi_loss + value_loss + entropy_loss

        with torch.no_grad():  # diagnostics; approxKl is the k3 estimator of KL(old || new)
            approx_kl = valid_mean(ratio - 1 - log_ratio, valid)
            clip_fraction = valid_mean(((ratio - 1).abs() > ratio_clip).float(), valid)
            perplexity = valid_mean(dist.perplexity(dist_info), valid)
        return dict(
            loss=loss,
            piLoss=pi_loss,
            valueLoss=value_loss,
            entropyLoss=entropy_loss,
            entropy=entropy,
            perplexity=perplexity,
            approxKl=approx_kl,
            ratioClipFraction=clip_fraction,
        )

    def make_batch(self, samples):
        """The batch on the agent's device, and the stored initial rnn state ``[B, N, H]``."""
        return_, advantage, valid = self.process_returns(samples)
        agent_info = samples.agent.agent_info
        with torch.no_grad():
            old_log_likelihood = self.agent.distribution.log_likelihood(
                samples.agent.action, agent_info.dist_info
            )
        batch = PpoBatch(
            agent_inputs=self.agent_inputs(samples),
            action=samples.agent.action,
            return_=return_,
            advantage=advantage,
            valid=valid,
            old_log_likelihood=old_log_likelihood,
            old_value=agent_info.value,
        )
        return buffer_to(batch, self.agent.device), self.initial_rnn_state(samples)

    def minibatch_indexes(self, T: int, B: int):
        """Shuffled index sets: env columns (recurrent) or flat ``t + T * b`` steps."""
        n = B if self.agent.recurrent else T * B
        order = torch.randperm(n, device=self.agent.device)
        return order.tensor_split(self.minibatches)

    def finish(self, opt_info: PpoOptInfo) -> PpoOptInfo:
        """End of an iteration: advance the learning-rate and clip schedule."""
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        return opt_info
