"""V-trace actor-critic in a plain PyTorch loop over ``rlpyt.rollout`` batches.

No runner and no algorithm class: the sampler streams ``[T, B]`` batches, and the loss
is put together from ``rlpyt.algos.losses``.  Each batch is trained on ``passes`` times;
from the second pass on the learner has moved away from the policy that collected the
batch, and V-trace's truncated importance weights correct for that lag (Espeholt et
al. 2018).  ``rhoMean`` in the printout shows how far the policies drifted apart.

    python examples/example_6_vtrace_rollout.py
"""

from __future__ import annotations

import numpy as np
import torch

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos import losses as L
from rlpyt.envs.gym import make
from rlpyt.rollout import rollout
from rlpyt.samplers.serial.sampler import SerialSampler


def vtrace_loss(agent, samples, discount=0.99, value_coeff=0.5, entropy_coeff=0.01):
    """The IMPALA loss of one batch and the mean importance ratio, from library parts."""
    dist_info, value = agent(samples.env.observation, samples.agent.prev_action,
                             samples.env.prev_reward)
    dist, action = agent.distribution, samples.agent.action
    log_pi = dist.log_likelihood(action, dist_info)
    with torch.no_grad():
        log_rho = log_pi - dist.log_likelihood(action, samples.agent.agent_info.dist_info)
        reward = samples.env.reward
        timeout = getattr(samples.env.env_info, "timeout", None)
        if timeout is not None:  # truncated episodes continue with V(final observation)
            reward = L.timeout_bootstrapped_reward(reward, timeout, samples.agent.timeout_value,
                                                   discount)
        vs, advantage = L.vtrace(reward, value.detach(), samples.env.done,
                                 samples.agent.bootstrap_value, discount, log_rho,
                                 rho_bar=1.0, c_bar=1.0)
    loss = (L.policy_gradient_loss(log_pi, advantage)
            + value_coeff * L.value_loss(value, vs)
            + entropy_coeff * L.entropy_loss(dist.entropy(dist_info)))
    return loss, torch.exp(log_rho).mean().item()


def build_and_train(n_steps: int = 150_000, seed: int = 0, batch_T: int = 16, batch_B: int = 8,
                    passes: int = 2, learning_rate: float = 1e-3, print_every: int = 50) -> dict:
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=batch_T,
                            batch_B=batch_B, max_decorrelation_steps=0)
    agent = CategoricalPgAgent()
    n_itr = max(1, n_steps // (batch_T * batch_B))
    returns, rho_means = [], []
    with rollout(sampler, agent, n_itr=n_itr, seed=seed, bootstrap_value=True) as batches:
        optimizer = torch.optim.Adam(agent.parameters(), lr=learning_rate)
        for batch in batches:
            for _ in range(passes):  # passes after the first are off-policy
                loss, rho_mean = vtrace_loss(agent, batch.samples)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(agent.parameters(), 1.0)
                optimizer.step()
                rho_means.append(rho_mean)
            returns.extend(info.Return for info in batch.traj_infos)
            if print_every and (batch.itr + 1) % print_every == 0:
                print(f"itr {batch.itr + 1}: mean return of the last 20 episodes "
                      f"{np.mean(returns[-20:]):.1f}, rhoMean {np.mean(rho_means[-passes:]):.3f}")
    return dict(final_return=float(np.mean(returns[-20:])) if returns else float("nan"),
                n_episodes=len(returns), final_loss=loss.item(), rho_means=rho_means)


if __name__ == "__main__":
    build_and_train()
