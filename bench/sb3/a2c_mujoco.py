"""Our MuJoCo ``a2c`` preset beside SB3's own A2C with the RL Baselines3 Zoo's settings
(the source of the preset and of the published HalfCheetah figure), same task, seeds,
budget and evaluation (10 episodes with the mean action every ``--eval-interval``).

SB3 runs in a venv of its own (``bench/peers/``, peer ``sb3``); each side's runs go to
``OUT/<side>/run_<seed>/progress.csv``, so ``rlpyt compare`` and ``rlpyt plot`` read
both.  The seeds of both sides run at once, one process each.

    python bench/sb3/a2c_mujoco.py --seeds 0 1 --n-steps 1e6 --out runs/a2c_vs_sb3
    rlpyt compare runs/a2c_vs_sb3/rlpyt runs/a2c_vs_sb3/sb3 --at 1000000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)  # bench/peers/

import peers  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--n-steps", type=float, default=1e6)
    p.add_argument("--eval-interval", type=float, default=5e4)
    p.add_argument("--out", default="runs/a2c_vs_sb3")
    p.add_argument("--sides", nargs="+", default=["rlpyt", "sb3"], choices=["rlpyt", "sb3"])
    args = p.parse_args()
    out = os.path.abspath(args.out)
    jobs = []
    if "sb3" in args.sides:
        for seed in args.seeds:
            jobs.append(threading.Thread(target=peers.run, args=("sb3", [
                "sb3_a2c.py", args.env, str(seed), str(args.n_steps), str(args.eval_interval),
                os.path.join(out, "sb3", f"run_{seed}")], 24 * 3600)))
    if "rlpyt" in args.sides:
        for seed in args.seeds:
            command = [sys.executable, "-m", "rlpyt", "train", "--algo", "a2c", "--env",
                       args.env, "--n-steps", str(int(args.n_steps)), "--seed", str(seed),
                       "--log-dir", os.path.join(out, "rlpyt"), "--run-id", str(seed),
                       "--runner.log_interval_steps", str(int(args.eval_interval))]
            jobs.append(threading.Thread(target=subprocess.run, args=(command,),
                                         kwargs=dict(stdout=subprocess.DEVNULL)))
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    print(f"runs in {out}; compare with: rlpyt compare {out}/rlpyt {out}/sb3 "
          f"--at {int(args.n_steps)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
