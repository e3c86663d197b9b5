"""Peer: a plain CleanRL-style PPO loop on Pong (written for this benchmark).

One process, no framework: EnvPool steps ``--B`` Pong envs (configured like rlpyt's
``AtariEnv``: frame skip 4, 4 stacked 104x80 frames, episodic lives, 30 no-op starts;
``--threads`` C++ threads), the Atari CNN of ``nets.py`` acts on the whole batch each
step, and after ``--T`` steps the loop computes GAE (gamma 0.99, lambda 0.95) and
takes ``--epochs`` epochs of ``--minibatches`` clipped-PPO minibatch steps (ratio clip
0.1, value coefficient 0.5, entropy 0.01, Adam 2.5e-4, gradient norm 0.5).

Prints ``PEER_RESULT {"steps_per_s": ...}``: agent steps per second of wall-clock time
from the end of the first iteration to the end of the last (start-up and the first,
warm-up iteration excluded), the same window rlpyt's runners are timed over.

    python cleanrl_style_ppo.py --iterations 5
"""

from __future__ import annotations

import json
import time

import envpool
import numpy as np
import torch
from nets import AtariNet
from ppo_args import parse_ppo_args


def main():
    a = parse_ppo_args()
    env = envpool.make_gymnasium("Pong-v5", num_envs=a.B, num_threads=a.threads, seed=0,
                                 img_height=104, img_width=80, episodic_life=True,
                                 use_fire_reset=False, reward_clip=True)
    shape, n_actions = env.observation_space.shape, env.action_space.n
    net = AtariNet(shape, n_actions)
    optim = torch.optim.Adam(net.parameters(), lr=2.5e-4, eps=1e-5)
    obs_buf = torch.zeros((a.T, a.B, *shape), dtype=torch.uint8)
    act_buf = torch.zeros((a.T, a.B), dtype=torch.long)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((a.T, a.B)) for _ in range(4))
    obs = torch.from_numpy(env.reset()[0])
    done = torch.zeros(a.B)
    marks = []
    for _ in range(a.iterations):
        for t in range(a.T):
            obs_buf[t] = obs
            done_buf[t] = done
            with torch.no_grad():
                pi, v = net(obs)
            action = torch.multinomial(pi, 1).squeeze(-1)
            act_buf[t], val_buf[t] = action, v
            logp_buf[t] = torch.log(pi.gather(-1, action[:, None]).squeeze(-1) + 1e-8)
            o, r, term, trunc, _ = env.step(action.numpy().astype(np.int32))
            obs = torch.from_numpy(o)
            rew_buf[t] = torch.from_numpy(np.asarray(r, dtype=np.float32))
            done = torch.from_numpy(np.logical_or(term, trunc).astype(np.float32))
        with torch.no_grad():
            next_v = net(obs)[1]
        adv = torch.zeros((a.T, a.B))
        last = torch.zeros(a.B)
        for t in reversed(range(a.T)):
            nonterminal = 1.0 - (done if t == a.T - 1 else done_buf[t + 1])
            nv = next_v if t == a.T - 1 else val_buf[t + 1]
            delta = rew_buf[t] + 0.99 * nv * nonterminal - val_buf[t]
            last = delta + 0.99 * 0.95 * nonterminal * last
            adv[t] = last
        ret = adv + val_buf
        b_obs, b_act = obs_buf.flatten(0, 1), act_buf.flatten()
        b_logp, b_adv, b_ret = logp_buf.flatten(), adv.flatten(), ret.flatten()
        n = a.T * a.B
        mb = n // a.minibatches
        for _ in range(a.epochs):
            perm = torch.randperm(n)
            for start in range(0, n, mb):
                idx = perm[start:start + mb]
                pi, v = net(b_obs[idx])
                logp = torch.log(pi.gather(-1, b_act[idx, None]).squeeze(-1) + 1e-8)
                ratio = torch.exp(logp - b_logp[idx])
                adv_mb = b_adv[idx]
                pg_loss = -torch.min(ratio * adv_mb,
                                     torch.clamp(ratio, 0.9, 1.1) * adv_mb).mean()
                v_loss = 0.5 * ((v - b_ret[idx]) ** 2).mean()
                entropy = -(pi * torch.log(pi + 1e-8)).sum(-1).mean()
                loss = pg_loss + 0.5 * v_loss - 0.01 * entropy
                optim.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
                optim.step()
        marks.append(time.perf_counter())
    steps = (len(marks) - 1) * a.T * a.B
    print("PEER_RESULT " + json.dumps(dict(steps_per_s=steps / (marks[-1] - marks[0]))))


if __name__ == "__main__":
    main()
