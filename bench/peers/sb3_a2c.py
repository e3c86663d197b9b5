"""SB3's A2C as the RL Baselines3 Zoo trains it on a MuJoCo task (hyperparams/a2c.yml,
``HalfCheetah-v4: normalize: true``: SB3's A2C defaults under VecNormalize), for
``bench/sb3/a2c_mujoco.py``.

    python sb3_a2c.py ENV_ID SEED N_STEPS EVAL_INTERVAL OUT_DIR

Writes OUT_DIR/progress.csv (CumSteps, CumTime (s), ReturnAverage: 10 evaluation
episodes with the mean action and frozen normalisation statistics, as the zoo
evaluates; TrainReturnAverage: the latest 100 training episodes) and prints
``PEER_RESULT {json}`` at the end.
"""

import csv
import json
import os
import sys
import time

import numpy as np
import torch
from stable_baselines3 import A2C
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecNormalize

env_id, seed, n_steps, interval, out = (sys.argv[1], int(sys.argv[2]), int(float(sys.argv[3])),
                                        int(float(sys.argv[4])), sys.argv[5])
torch.set_num_threads(1)
os.makedirs(out, exist_ok=True)
env = VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed), gamma=0.99)
eval_env = VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed + 10_000), gamma=0.99,
                        training=False, norm_reward=False)
model = A2C("MlpPolicy", env, seed=seed, device="cpu")
start = time.time()
rows = []


def evaluate(steps):
    eval_env.obs_rms = env.obs_rms  # the training statistics, frozen for evaluation
    returns, _ = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True,
                                 return_episode_rewards=True)
    train = [e["r"] for e in model.ep_info_buffer] if model.ep_info_buffer else []
    rows.append(dict(CumSteps=steps, **{"CumTime (s)": time.time() - start},
                     ReturnAverage=float(np.mean(returns)),
                     TrainReturnAverage=float(np.mean(train)) if train else float("nan")))
    with open(os.path.join(out, "progress.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


class EvalEvery(BaseCallback):
    def _on_step(self):
        if self.num_timesteps % interval == 0:
            evaluate(self.num_timesteps)
        return True


evaluate(0)
model.learn(total_timesteps=n_steps, callback=EvalEvery())
print("PEER_RESULT " + json.dumps(dict(final=rows[-1], seconds=time.time() - start)),
      flush=True)
