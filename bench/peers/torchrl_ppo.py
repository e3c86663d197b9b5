"""Peer: PPO on Pong built from TorchRL's public pieces, with the pong-ppo row's settings.

Run in the TorchRL venv (``bench/peers/``).  A ``Collector`` (TorchRL 0.14's
``SyncDataCollector``) over a ``MultiThreadedEnv`` of ``--B`` EnvPool Pong envs
(``--threads`` C++ threads, rewards clipped) gathers ``--B x --T`` agent steps with the
Atari CNN (``torchrl_parts.py``); ``GAE`` (gamma 0.99, lambda 0.95) computes advantages
once per batch; the batch goes into a ``ReplayBuffer`` (``LazyTensorStorage``,
``SamplerWithoutReplacement``) and ``ClipPPOLoss`` (ratio clip 0.1, entropy 0.01, value
coefficient 0.5 on its L2 value loss, which lacks the 1/2 of the CleanRL-style loop's:
the same work, twice the value gradient; advantages not normalized) takes ``--epochs``
epochs of ``--minibatches`` minibatches, Adam 2.5e-4 (eps 1e-5), gradient norm 0.5:
the settings of ``cleanrl_style_ppo.py`` and of rlpyt's ``PPO`` in
``bench/throughput/peer_throughput.py``.

Prints ``PEER_RESULT {"steps_per_s": ...}``: agent steps per second from the end of
the first iteration to the end of the last (start-up and the warm-up iteration
excluded), the window the other PPO rows are timed over.

    python torchrl_ppo.py --iterations 3
"""

from __future__ import annotations

import json
import time

import torch
from ppo_args import parse_ppo_args
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE
from torchrl_parts import actor_critic, make_pong

DONE_AND_REWARD = [("next", k) for k in ("reward", "done", "terminated", "truncated")]


def main():
    a = parse_ppo_args()
    env = make_pong(a.B, a.threads, reward_clip=True)
    model = actor_critic(env)
    actor, critic = model.get_policy_operator(), model.get_value_operator()
    batch = a.B * a.T
    collector = Collector(env, actor, frames_per_batch=batch,
                          total_frames=a.iterations * batch)
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=False)
    loss_fn = ClipPPOLoss(actor, critic, clip_epsilon=0.1, entropy_coeff=0.01,
                          critic_coeff=0.5, loss_critic_type="l2",
                          normalize_advantage=False)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=2.5e-4, eps=1e-5)
    buffer = ReplayBuffer(storage=LazyTensorStorage(batch), sampler=SamplerWithoutReplacement(),
                          batch_size=batch // a.minibatches)
    marks = []
    try:
        for data in collector:
            # TorchRL's losses and GAE want rewards and done flags with a unit last dim
            # (as the value has); its EnvPool wrapper gives them the batch shape alone.
            for key in DONE_AND_REWARD:
                data.set(key, data.get(key).unsqueeze(-1))
            with torch.no_grad():
                advantage(data)
            buffer.extend(data.reshape(-1))
            for _ in range(a.epochs * a.minibatches):
                losses = loss_fn(buffer.sample())
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optim.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(loss_fn.parameters(), 0.5)
                optim.step()
            collector.update_policy_weights_()
            marks.append(time.perf_counter())
    finally:
        collector.shutdown()
    steps = (len(marks) - 1) * batch
    print("PEER_RESULT " + json.dumps(dict(steps_per_s=steps / (marks[-1] - marks[0]))))


if __name__ == "__main__":
    main()
