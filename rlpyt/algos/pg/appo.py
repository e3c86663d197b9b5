"""APPO: PPO's clipped surrogate on the batches of a lagging behaviour policy, with
V-trace targets (asynchronous PPO)."""

from __future__ import annotations

import math
from collections import namedtuple

import torch

from rlpyt.agents.base import AgentInputs
from rlpyt.algos import losses
from rlpyt.algos.pg.impala import Impala, ImpalaBatch
from rlpyt.algos.pg.ppo import flatten_steps
from rlpyt.utils.buffer import buffer_to
from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.tensor import valid_mean

__all__ = ["APPO", "AppoMinibatch", "AppoOptInfo"]

AppoOptInfo = namedtuple(
    "AppoOptInfo",
    ["loss", "gradNorm", "entropy", "perplexity", "piLoss", "valueLoss", "entropyLoss",
     "approxKl", "ratioClipFraction", "rhoMean", "rhoClipFraction", "batchLag",
     "learningRate"],
)
# What the minibatches index, together over [T, B] (flattened steps for feed-forward
# agents): the targets are fixed once per batch, before its first gradient step.
AppoMinibatch = namedarraytuple(
    "AppoMinibatch",
    ["agent_inputs", "action", "value_target", "advantage", "valid",
     "anchor_log_likelihood", "old_value"],
)


class APPO(Impala):
    """Asynchronous PPO: several epochs of PPO's clipped surrogate over the minibatches
    of each batch an asynchronous sampler delivers, with the ratio taken against the
    behaviour policy that acted and the targets corrected for its lag with V-trace
    (Espeholt et al. 2018; the combination of Sample Factory's APPO, Petrenko et al.
    2020, with V-trace on).

    Each ``optimize_agent`` learns from one ``[T, B]`` batch.  First, once, with the
    learner's parameters at that moment, the proximal policy ``pi_prox`` (no gradient)::

        rho = pi_prox(a|x) / mu(a|x)         (mu: the sampler's recorded dist_info)
        v_s, A_s = vtrace(reward_scale * r, V(x), done, V(x_T), gamma, log rho,
                          rho_bar, c_bar, lambda)
        A_s = r_s + gamma v_{s+1} - V(x_s)   (V-trace's advantage, normalized if asked)

    then ``epochs`` passes in ``minibatches`` shuffled minibatches, each a gradient
    step on::

        ratio = pi_theta(a|x) / pi_anchor(a|x)
        loss = -mean(w min(ratio A, clip(ratio, 1 - eps, 1 + eps) A))
               + value_loss_coeff * mean(0.5 (V_theta(x) - v_s)^2)
               - entropy_loss_coeff * mean(H(pi_theta(.|x)))

    **Which policy anchors the clip** (``proximal_policy``).  With ``"learner"`` (the
    default) the anchor is ``pi_prox`` and ``w = min(pg_rho_bar, rho)``: the decoupled
    objective of Hilton et al. 2021 ("Batch size-invariance for policy optimization").
    The trust region is then around the policy being improved, and the importance
    weight alone corrects for the sampler having acted with ``mu``.  With
    ``"behaviour"`` the anchor is ``mu`` and ``w = 1``, as Sample Factory's APPO: the
    ratio then also carries the lag, so a learner ``k`` batches ahead of the sampler
    starts each batch already near the clip's edge and moves the policy by about
    ``eps`` per ``k + 1`` batches instead of per batch.  Without lag the two are the
    same update, PPO's.

    **Why V-trace.**  The clip bounds how far one batch moves the policy, but GAE's
    targets would be the lagging policy's returns.  V-trace makes them the learner's:
    ``rho`` truncated at ``rho_bar`` weights each TD error and ``c`` cuts the traces
    where the policies disagree.  On-policy (no lag) every rho is 1 and the targets are
    lambda-returns of the learner's values: the update is PPO's.

    Under an asynchronous runner (``rlpyt train --runner async --algo appo``) the
    sampler writes into a FIFO of ``fifo_size`` batches, as for ``Impala``: learning on
    one batch overlaps the sampling of the next, and the sampler runs at most
    ``fifo_size - 1`` batches ahead.  Under synchronous runners it is PPO with V-trace
    targets.  Feed-forward agents shuffle single steps over ``T * B``; recurrent agents
    shuffle whole env columns, replaying each from the state stored at its first step.

    Args:
        discount: reward discount gamma (default 0.99).
        learning_rate: optimizer step size at the start (default 0.001, PPO's).
        value_loss_coeff: weight of the value regression (default 1., PPO's).
        entropy_loss_coeff: weight of the entropy bonus (default 0.01).
        OptimCls: torch optimizer class (default ``torch.optim.Adam``).
        optim_kwargs: extra keyword arguments for ``OptimCls`` (default None: none).
        clip_grad_norm: maximum global gradient norm; None disables clipping (default 1.).
        initial_optim_state_dict: optimizer (and schedule) state to load at
            initialization (default None).
        epochs: passes over each batch (default 4, PPO's).
        minibatches: minibatches per epoch; must divide ``batch_B`` for recurrent agents
            (default 4, PPO's).
        ratio_clip: the clipping range eps of ``pi_theta / mu`` (default 0.1, PPO's).
        clip_vf_loss: also clip the value update around the learner's value at the start
            of the batch, taking the larger of the clipped and unclipped errors (default
            False).
        vf_clip: range of that value clip; None uses ``ratio_clip`` (default None).
        rho_bar: truncation of rho in V-trace's TD errors: sets the policy whose values
            the targets are (default 1., the IMPALA paper's).
        c_bar: truncation of V-trace's trace coefficients (default 1.).
        pg_rho_bar: truncation of the surrogate's importance weight ``w`` under
            ``proximal_policy="learner"``; None uses ``rho_bar`` (default None, as
            IMPALA's policy gradient).
        proximal_policy: the policy the ratio is clipped around: ``"learner"`` (its
            parameters at the start of the batch, with the advantages weighted by the
            truncated ``rho``) or ``"behaviour"`` (the sampler's ``mu``, unweighted)
            (default ``"learner"``).
        vtrace_lambda: trace decay; on-policy the targets are lambda-returns, as GAE's
            (default 1.).
        normalize_advantage: scale the advantages to mean 0, std 1 over the valid
            entries of each batch (default False, as PPO's).
        fifo_size: batches held between sampler and learner in asynchronous runs (at
            least 2; default 4).  A batch counts as consumed once its last gradient
            step is taken, so a learner slower than the sampler learns each batch
            ``fifo_size - 2`` batches after the parameters that sampled it, and a FIFO
            of 2 leaves the sampler nothing to sample while the learner works.
        updates_per_sync: batches learned between publishing the parameters to the
            samplers in asynchronous runs (default 1).
        linear_lr_schedule: anneal the learning rate linearly to 0 over the run's
            batches, one schedule step per batch (default True).
        reward_scale: factor on every reward in the targets (default 1.; see ``Impala``).
    """

    opt_info_fields = tuple(AppoOptInfo._fields)
    weight_pg_advantage = False  # the weight goes on after the advantages' normalization
    batches_learned = 0
    proximal_policies = ("learner", "behaviour")

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
        epochs: int = 4,
        minibatches: int = 4,
        ratio_clip: float = 0.1,
        clip_vf_loss: bool = False,
        vf_clip: float | None = None,
        rho_bar: float | None = 1.0,
        c_bar: float | None = 1.0,
        pg_rho_bar: float | None = None,
        proximal_policy: str = "learner",
        vtrace_lambda: float = 1.0,
        normalize_advantage: bool = False,
        fifo_size: int = 4,
        updates_per_sync: int = 1,
        linear_lr_schedule: bool = True,
        reward_scale: float = 1.0,
    ):
        super().__init__(
            discount=discount, learning_rate=learning_rate, value_loss_coeff=value_loss_coeff,
            entropy_loss_coeff=entropy_loss_coeff, OptimCls=OptimCls,
            optim_kwargs=optim_kwargs, clip_grad_norm=clip_grad_norm,
            initial_optim_state_dict=initial_optim_state_dict, rho_bar=rho_bar, c_bar=c_bar,
            pg_rho_bar=pg_rho_bar, vtrace_lambda=vtrace_lambda,
            normalize_advantage=normalize_advantage,
            fifo_size=fifo_size, updates_per_sync=updates_per_sync,
            linear_lr_schedule=linear_lr_schedule, reward_scale=reward_scale,
        )
        self.epochs, self.minibatches, self.ratio_clip = epochs, minibatches, ratio_clip
        self.clip_vf_loss, self.vf_clip = clip_vf_loss, vf_clip
        self.proximal_policy = proximal_policy
        self.check_surrogate_args(optional=("vf_clip",))
        if proximal_policy not in self.proximal_policies:
            raise ValueError(f"APPO: proximal_policy={proximal_policy!r} must be one of "
                             f"{list(self.proximal_policies)}")

    # ---- set-up: the minibatches must split the batch ----------------------------------
    def initialize(self, agent, n_itr: int, batch_spec, mid_batch_reset: bool = False,
                   examples=None, world_size: int = 1, rank: int = 0) -> None:
        self.check_minibatches(agent, batch_spec)
        super().initialize(agent, n_itr, batch_spec, mid_batch_reset, examples, world_size,
                           rank)

    def async_initialize(self, agent, sampler_n_itr: int, batch_spec, mid_batch_reset: bool,
                         examples, world_size: int = 1):
        """As ``Impala``'s; one throttle "update" is one batch learned (its epochs of
        gradient steps), so ``batch_size`` stays the whole batch."""
        self.check_minibatches(agent, batch_spec)
        return super().async_initialize(agent, sampler_n_itr, batch_spec, mid_batch_reset,
                                        examples, world_size)

    # ---- versions count batches, not gradient steps -------------------------------------
    @property
    def learned_version(self) -> int:
        """Batches learned from (``epochs * minibatches`` gradient steps each)."""
        return self.batches_learned

    def state_dict(self) -> dict:
        return dict(super().state_dict(), batches_learned=self.batches_learned)

    def load_state_dict(self, state_dict: dict) -> None:
        if "batches_learned" not in state_dict:
            raise KeyError(f"APPO.load_state_dict: the state has no 'batches_learned' (has "
                           f"{sorted(state_dict)}); pass what APPO.state_dict() returned")
        self.batches_learned = int(state_dict["batches_learned"])
        super().load_state_dict(state_dict)

    # ---- one batch: its targets, then epochs of minibatch steps -------------------------
    def optimize_agent(self, itr: int, samples=None, sampler_itr: int | None = None):
        """``epochs`` x ``minibatches`` gradient steps on one batch: ``samples``
        (synchronous runners) or the oldest unconsumed FIFO batch (asynchronous).

        Returns ``AppoOptInfo``: lists with one entry per gradient step, and one per
        batch for ``rhoMean``, ``rhoClipFraction``, ``batchLag`` and ``learningRate``.
        """
        batch = self.next_batch(samples)
        policy_lag = self.learned_version - int(batch.policy_version)
        learning_rate = self.optimizer.param_groups[0]["lr"]
        data, init_rnn_state, rho_info = self.minibatch_data(buffer_to(batch,
                                                                       self.agent.device))
        T, B = batch.reward.shape[:2]
        if init_rnn_state is None:
            data = flatten_steps(data)  # row t + T * b: a minibatch is one gather per field
        steps = []
        for _epoch in range(self.epochs):
            for idxs in self.minibatch_indexes(T, B):
                minibatch, rnn_state = self.select_minibatch(data, init_rnn_state, idxs)
                terms = self.loss(minibatch, rnn_state)
                if not math.isfinite(terms["loss"].item()):
                    self.check_finite(itr, pi_loss=terms["piLoss"],
                                      value_loss=terms["valueLoss"], loss=terms["loss"])
                grad_norm = self.gradient_step(terms["loss"], as_tensor=True)
                steps.append(dict(terms, gradNorm=grad_norm))
        self.batches_learned += 1
        self.batch_learned()
        return self.opt_info(steps, rho_info, policy_lag, learning_rate)

    def minibatch_data(self, batch: ImpalaBatch):
        """The fixed part of every minibatch of ``batch`` (V-trace targets, advantages and
        the clip's anchor, from the learner's current parameters), its initial rnn state
        ``[B, N, H]`` (None for feed-forward agents), and the batch's rho diagnostics."""
        inputs = AgentInputs(batch.observation, batch.prev_action, batch.prev_reward)
        init_rnn_state = None
        with torch.no_grad():
            if self.agent.recurrent:
                if batch.init_rnn_state is None:
                    raise ValueError("APPO: a recurrent agent needs the batch's initial rnn "
                                     "state (agent_info.prev_rnn_state), which the samples "
                                     "lack")
                init_rnn_state = batch.init_rnn_state
                dist_info, value, _ = self.agent(*inputs,
                                                 self.rnn_state_for_model(init_rnn_state))
            else:
                dist_info, value = self.agent(*inputs)
            dist = self.agent.distribution
            proximal = dist.log_likelihood(batch.action, dist_info)
            behaviour = dist.log_likelihood(batch.action, batch.behaviour_dist_info)
            log_rho = proximal - behaviour
            vs, advantage, valid = self.vtrace_targets(batch, value, log_rho)
            if self.normalize_advantage:
                advantage = self.normalized(advantage, valid)
            rho = torch.exp(log_rho)
            if self.proximal_policy == "learner":
                anchor = proximal
                bar = self.rho_bar if self.pg_rho_bar is None else self.pg_rho_bar
                advantage = advantage * (rho if bar is None else rho.clamp(max=bar))
            else:
                anchor = behaviour
            rho_info = dict(rhoMean=valid_mean(rho, valid),
                            rhoClipFraction=self.clip_fraction(rho, self.rho_bar, valid))
        data = AppoMinibatch(agent_inputs=inputs, action=batch.action, value_target=vs,
                             advantage=advantage, valid=valid,
                             anchor_log_likelihood=anchor, old_value=value)
        return data, init_rnn_state, rho_info

    def loss(self, minibatch: AppoMinibatch, init_rnn_state=None) -> dict:
        """The APPO loss on one minibatch and its per-step diagnostics."""
        if init_rnn_state is None:
            dist_info, value = self.agent(*minibatch.agent_inputs)
        else:
            dist_info, value, _ = self.agent(*minibatch.agent_inputs, init_rnn_state)
        dist, valid = self.agent.distribution, minibatch.valid
        log_ratio = (dist.log_likelihood(minibatch.action, dist_info)
                     - minibatch.anchor_log_likelihood)
        pi_loss = losses.clipped_surrogate_loss(log_ratio, minibatch.advantage,
                                                self.ratio_clip, valid)
        if self.clip_vf_loss:
            vf_clip = self.ratio_clip if self.vf_clip is None else self.vf_clip
            value_loss = self.value_loss_coeff * losses.clipped_value_loss(
                value, minibatch.old_value, minibatch.value_target, vf_clip, valid)
        else:
            value_loss = self.value_loss(value, minibatch.value_target, valid)
        entropy = dist.entropy(dist_info)
        entropy_loss = self.entropy_loss_coeff * losses.entropy_loss(entropy, valid)
        with torch.no_grad():
            ratio = torch.exp(log_ratio)
            diagnostics = dict(
                entropy=valid_mean(entropy, valid),
                perplexity=valid_mean(torch.exp(entropy), valid),
                approxKl=losses.approx_kl(log_ratio, valid),
                ratioClipFraction=valid_mean(
                    ((ratio - 1).abs() > self.ratio_clip).to(ratio.dtype), valid),
            )
        return dict(loss=pi_loss + value_loss + entropy_loss, piLoss=pi_loss,
                    valueLoss=value_loss, entropyLoss=entropy_loss, **diagnostics)

    @staticmethod
    def opt_info(steps: list[dict], rho_info: dict, policy_lag: int,
                 learning_rate: float) -> AppoOptInfo:
        """``AppoOptInfo`` of lists from the steps' tensors, in one conversion."""
        step_names = [n for n in AppoOptInfo._fields if n in steps[0]]
        with torch.no_grad():
            table = torch.stack([torch.stack([step[n].float().reshape(())
                                              for n in step_names]) for step in steps])
            per_batch = torch.stack([rho_info[n].float() for n in rho_info]).tolist()
        columns = dict(zip(step_names, table.T.tolist()))
        columns.update({n: [v] for n, v in zip(rho_info, per_batch)})
        columns.update(batchLag=[float(policy_lag)], learningRate=[learning_rate])
        return AppoOptInfo(**columns)
