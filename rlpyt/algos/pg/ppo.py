"""Proximal policy optimization (PPO) with the clipped surrogate objective."""

from __future__ import annotations

import math
from collections import namedtuple

import torch

from rlpyt.algos import losses
from rlpyt.algos.pg.base import PolicyGradientAlgo, linear_decay
from rlpyt.utils.buffer import buffer_func, buffer_method, buffer_to
from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.quick_args import save__init__args

__all__ = ["PPO", "PpoBatch", "PpoOptInfo", "flatten_steps", "segment_valid_mean"]

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


def flatten_steps(batch):
    """``[T, B, ...]`` leaves -> ``[B * T, ...]`` copies with step ``(t, b)`` at row
    ``t + T * b`` (the numbering ``minibatch_indexes`` draws from)."""
    return buffer_func(batch, lambda x: x.transpose(0, 1).reshape((-1,) + x.shape[2:]))


def cat_buffers(buffers: list):
    """Concatenate same-structured buffers (namedtuples of tensors, None) along dim 0."""
    first = buffers[0]
    if first is None:
        return None
    if isinstance(first, tuple):
        return type(first)(*(cat_buffers(list(fields)) for fields in zip(*buffers)))
    return torch.cat(buffers)


def segment_valid_mean(
    values: torch.Tensor, sizes: list[int], valid: torch.Tensor | None = None
) -> tuple[torch.Tensor, ...]:
    """Means of consecutive segments of ``values`` ``[K, sum(sizes)]``, each over the entries
    where ``valid`` ``[sum(sizes)]`` is nonzero (all if None), as ``valid_mean`` takes them.

    Returns K tensors of shape ``[len(sizes)]``.  One call replaces ``K * len(sizes)``
    separate means (e.g. the diagnostics of every minibatch of an iteration).
    """
    n = len(sizes)
    if valid is None and len(set(sizes)) == 1:
        return values.reshape(values.shape[0], n, sizes[0]).mean(-1).unbind(0)
    segment = torch.repeat_interleave(
        torch.arange(n, device=values.device), torch.tensor(sizes, device=values.device)
    )
    weight = torch.ones_like(values[0]) if valid is None else valid.to(values.dtype)
    sums = values.new_zeros(values.shape[0], n).index_add_(1, segment, values * weight)
    counts = values.new_zeros(n).index_add_(0, segment, weight)
    return (sums / counts.clamp(min=1)).unbind(0)


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
        linear_lr_schedule: anneal the learning rate (and ``ratio_clip``, see
            ``anneal_ratio_clip``) linearly to 0 over the run: a ``LambdaLR`` stepped once
            per ``optimize_agent`` call (iteration), reaching 0 after ``n_itr``
            iterations.  Its state is part of ``optim_state_dict()``, so a resumed run
            continues the schedule (default True).
        normalize_advantage: scale advantages to mean 0, std 1 over the valid entries of
            each batch, once per batch (default False).
        clip_vf_loss: also clip the value update around the sampled value estimate,
            taking the larger of the clipped and unclipped errors (default False).
        vf_clip: range of that value clip; None uses the current ``ratio_clip``
            (default None; only used with ``clip_vf_loss``).
        target_kl: stop the remaining epochs of this batch before any minibatch step
            whose estimated KL(pi_old || pi) exceeds this value; None never stops early
            (default None).
        anneal_ratio_clip: under ``linear_lr_schedule``, anneal ``ratio_clip`` (and with
            it ``vf_clip=None``'s value clip) with the learning rate, as the PPO paper's
            Atari runs do over 40M frames (default True).  False keeps it fixed, as
            CleanRL does: over a short run the annealed clip lets the policy and the
            value move less and less while there is still much to learn.
        normalize_returns: value targets (and, with ``clip_vf_loss``, the value clip)
            in units of the returns' running std, as in ``A2C`` (default False).
        normalize_rewards: learn from rewards scaled by the running std of the
            discounted return, as in ``A2C`` (CleanRL's MuJoCo PPO; default False).
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
        anneal_ratio_clip: bool = True,
        normalize_returns: bool = False,
        normalize_rewards: bool = False,
    ):
        save__init__args(locals())
        self.optim_kwargs = dict(optim_kwargs or {})
        self.check_common_args()
        self.check_surrogate_args(optional=("vf_clip", "target_kl"))

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

    @property
    def current_ratio_clip(self) -> float:
        """``ratio_clip``, annealed with the learning rate under ``linear_lr_schedule``
        and ``anneal_ratio_clip``."""
        if self.lr_scheduler is None or not self.anneal_ratio_clip:
            return self.ratio_clip
        return self.ratio_clip * linear_decay(self.lr_scheduler.last_epoch, self.n_itr)

    def optimize_agent(self, itr: int, samples=None, sampler_itr: int | None = None):
        """``epochs`` x ``minibatches`` gradient steps; returns ``PpoOptInfo`` of lists."""
        self.update_obs_normalizer(samples)
        batch, init_rnn_state = self.make_batch(samples)
        ratio_clip = self.current_ratio_clip
        learning_rate = self.optimizer.param_groups[0]["lr"]
        T, B = samples.env.reward.shape[:2]
        if init_rnn_state is None:
            batch = flatten_steps(batch)  # row t + T * b: a minibatch is one gather per field
        steps = []  # per gradient step: (loss terms, valid, grad norm), read after the epochs
        for _epoch in range(self.epochs):
            for idxs in self.minibatch_indexes(T, B):
                minibatch, rnn_state = self.select_minibatch(batch, init_rnn_state, idxs)
                terms = self.loss(minibatch, rnn_state, ratio_clip)
                if not math.isfinite(terms["loss"].item()):
                    self.check_finite(itr, pi_loss=terms["piLoss"], value_loss=terms["valueLoss"],
                                      loss=terms["loss"])
                if self.target_kl is not None and self.kl_exceeded(terms, minibatch.valid):
                    break  # the policy moved far enough on this batch
                grad_norm = self.gradient_step(terms["loss"], as_tensor=True)
                steps.append((terms, minibatch.valid, grad_norm))
            else:
                continue
            break
        return self.finish(self.make_opt_info(steps, ratio_clip, learning_rate))

    def loss(self, batch: PpoBatch, init_rnn_state, ratio_clip: float) -> dict:
        """The PPO loss on one minibatch: ``loss``, ``piLoss``, ``valueLoss`` (tensors in
        the graph), and ``logRatio`` and ``distInfo`` (detached) for ``step_diagnostics``."""
        if init_rnn_state is None:
            dist_info, value = self.agent(*batch.agent_inputs)
        else:
            dist_info, value, _ = self.agent(*batch.agent_inputs, init_rnn_state)
        dist, valid, advantage = self.agent.distribution, batch.valid, batch.advantage

        log_ratio = dist.log_likelihood(batch.action, dist_info) - batch.old_log_likelihood
        pi_loss = losses.clipped_surrogate_loss(log_ratio, advantage, ratio_clip, valid)
        if self.clip_vf_loss:
            vf_clip = ratio_clip if self.vf_clip is None else self.vf_clip
            value_loss = self.value_loss_coeff * losses.clipped_value_loss(
                value, batch.old_value, batch.return_, vf_clip, valid
            )
        else:
            value_loss = self.value_loss(value, batch.return_, valid)

        loss = pi_loss + value_loss
        if self.entropy_loss_coeff != 0:  # a zero-weighted term would only add backward work
            loss = loss + self.entropy_loss_coeff * losses.entropy_loss(
                dist.entropy(dist_info), valid
            )
        return dict(
            loss=loss,
            piLoss=pi_loss,
            valueLoss=value_loss,
            logRatio=log_ratio.detach(),
            distInfo=buffer_method(dist_info, "detach"),
        )

    def kl_exceeded(self, terms: dict, valid) -> bool:
        """Whether this minibatch's approxKl (as ``step_diagnostics``) exceeds ``target_kl``."""
        return losses.approx_kl(terms["logRatio"], valid).item() > self.target_kl

    def step_diagnostics(self, terms_list: list, valids: list, ratio_clip: float) -> dict:
        """Per-step diagnostics from the detached outputs of ``loss``, computed for all
        gradient steps of an iteration at once (a handful of ops instead of dozens per step).

        Returns a dict of ``[n_steps]`` tensors: ``approxKl`` (the k3 estimator of
        KL(old || new): mean of ``ratio - 1 - log(ratio)``), ``ratioClipFraction`` (share
        of ``|ratio - 1| > ratio_clip``), ``entropy``, ``entropyLoss`` and ``perplexity``
        (mean of ``exp(entropy)``), each a mean over the valid entries of its minibatch.
        """
        log_ratios = [terms["logRatio"] for terms in terms_list]
        dist_infos = [terms["distInfo"] for terms in terms_list]
        lead_ndim = log_ratios[0].dim()
        if lead_ndim != 1:  # recurrent minibatches [T, B_mb]: flatten the leading dims
            log_ratios = [x.reshape(-1) for x in log_ratios]
            dist_infos = [
                buffer_func(d, lambda x: x.reshape((-1,) + x.shape[lead_ndim:]))
                for d in dist_infos
            ]
        log_ratio, dist_info = torch.cat(log_ratios), cat_buffers(dist_infos)
        ratio = torch.exp(log_ratio)
        entropy = self.agent.distribution.entropy(dist_info)
        per_entry = torch.stack((
            losses.approx_kl_terms(log_ratio),
            ((ratio - 1).abs() > ratio_clip).float(),
            entropy,
            torch.exp(entropy),
        ))
        sizes = [x.numel() for x in log_ratios]
        valid = None if valids[0] is None else torch.cat([v.reshape(-1) for v in valids])
        approx_kl, clip_fraction, entropy, perplexity = segment_valid_mean(per_entry, sizes, valid)
        return dict(
            approxKl=approx_kl,
            ratioClipFraction=clip_fraction,
            entropy=entropy,
            entropyLoss=-self.entropy_loss_coeff * entropy,
            perplexity=perplexity,
        )

    def make_opt_info(self, steps: list, ratio_clip: float, learning_rate: float) -> PpoOptInfo:
        """One ``PpoOptInfo`` of lists from the per-step tensors (a single conversion)."""
        opt_info = PpoOptInfo(*([] for _ in PpoOptInfo._fields))
        if not steps:
            return opt_info
        terms_list, valids, grad_norms = zip(*steps)
        with torch.no_grad():
            columns = dict(
                loss=torch.stack([terms["loss"] for terms in terms_list]),
                piLoss=torch.stack([terms["piLoss"] for terms in terms_list]),
                valueLoss=torch.stack([terms["valueLoss"] for terms in terms_list]),
                gradNorm=torch.stack(grad_norms),
                **self.step_diagnostics(terms_list, valids, ratio_clip),
            )
            names = list(columns)
            values = torch.stack([columns[name].float() for name in names]).tolist()
        for name, column in zip(names, values):
            getattr(opt_info, name).extend(column)
        opt_info.ratioClip.extend([ratio_clip] * len(steps))
        opt_info.learningRate.extend([learning_rate] * len(steps))
        return opt_info

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

    def finish(self, opt_info: PpoOptInfo) -> PpoOptInfo:
        """End of an iteration: advance the learning-rate and clip schedule."""
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        return opt_info
