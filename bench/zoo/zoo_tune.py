"""``rlpyt tune`` beside the RL Baselines3 Zoo's ``--optimize``: the same search, both
tools' own command lines, trials finished per hour and the best objective found.

The search is PPO on CartPole-v1 with the Zoo's CartPole settings (8 envs, rollouts of
32 steps, one minibatch of 256, 20 epochs, discount 0.98, GAE lambda 0.8; our ``ppo``
preset's values, with its learning-rate and clip annealing turned off as the Zoo's
sampled constants have them), over three dimensions (``SPACE``: the learning rate, the
ratio clip and the entropy coefficient). The Zoo's own PPO space is fixed in its code;
``bench/peers/zoo_optimize.py`` gives it this one instead and runs ``rl_zoo3.train
--optimize``. Both sides: the same number of trials and of trials at once, one run per
trial, TPE (multivariate) after 10 random trials, the median pruner after 10 finished
trials and a third of the evaluations, ``--evals`` evaluations per trial (5 episodes
each), and the objective the last evaluation's mean return.

What differs, and stays as each tool has it: the Zoo runs its trials as threads of one
process with torch's default threads and evaluates with the greedy action; ``rlpyt
tune`` runs each trial as an ``rlpyt train`` process pinned to its share of the CPUs
and evaluates by sampling the policy.

    python bench/zoo/zoo_tune.py --trials 16 --jobs 2 --n-steps 50000 --out runs/zoo_tune

The two studies run one after the other, each with the machine to itself; the table
gives each side's figures and the ratio of ours to the Zoo's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)  # bench/peers/

import peers  # noqa: E402

# name, distribution, low, high; our flag and the Zoo's PPO keyword for it.
SPACE = [
    ("learning_rate", "loguniform", 1e-5, 1e-1),
    ("clip_range", "uniform", 0.05, 0.4),
    ("ent_coef", "loguniform", 1e-4, 1e-1),
]
OUR_FLAG = {"learning_rate": "algo.learning_rate", "clip_range": "algo.ratio_clip",
            "ent_coef": "algo.entropy_loss_coeff"}
SOLVED = 475.0  # CartPole-v1's reward threshold.


def run_ours(args, out: str) -> dict:
    study_dir = os.path.join(out, "rlpyt")
    interval = args.n_steps // args.evals
    searched = [t for name, kind, low, high in SPACE
                for t in (f"--{OUR_FLAG[name]}", f"{kind}({low},{high})")]
    command = [sys.executable, "-m", "rlpyt", "tune", "--study", study_dir,
               "--trials", str(args.trials), "--jobs", str(args.jobs), "--seeds", "1",
               "--last", "1", "--search", "tpe", "--startup-trials", "10",
               "--pruner", "median", "--prune-startup-trials", "10",
               "--warmup-steps", str(interval * (args.evals // 3)),
               "--tune-seed", str(args.seed),
               "--algo", "ppo", "--env", "CartPole-v1", "--n-steps", str(args.n_steps),
               "--runner.log_interval_steps", str(interval), "--snapshot-mode", "none",
               "--algo.linear_lr_schedule", "False", "--algo.anneal_ratio_clip", "False",
               "--sampler.eval_max_trajectories", "5", *searched]
    started = time.time()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.time() - started
    import optuna

    study = optuna.load_study(study_name="rlpyt",
                              storage=f"sqlite:///{os.path.join(study_dir, 'study.db')}")
    trials = [dict(number=t.number, state=t.state.name, value=t.value,
                   start=t.datetime_start.timestamp() if t.datetime_start else None,
                   end=t.datetime_complete.timestamp() if t.datetime_complete else None,
                   steps=max(t.intermediate_values) if t.intermediate_values else 0)
              for t in study.trials]
    return dict(wall_s=wall, started=started, trials=trials)


def run_zoo(args, out: str) -> dict | None:
    zoo_dir = os.path.join(out, "zoo")
    os.makedirs(zoo_dir, exist_ok=True)
    storage = f"sqlite:///{os.path.join(zoo_dir, 'study.db')}"
    zoo_args = ["--algo", "ppo", "--env", "CartPole-v1", "-n", str(args.n_steps),
                "--optimize", "--n-trials", str(args.trials), "--n-jobs", str(args.jobs),
                "--sampler", "tpe", "--pruner", "median", "--n-startup-trials", "10",
                "--n-evaluations", str(args.evals), "--eval-episodes", "5",
                "--seed", str(args.seed), "-f", os.path.join(zoo_dir, "logs"),
                "--no-optim-plots", "--verbose", "0"]
    result = peers.run("zoo", ["zoo_optimize.py", "--space", json.dumps(SPACE),
                               "--storage", storage, "--study-name", "zoo", "--", *zoo_args],
                       timeout=6 * 3600)
    if result is None:
        return None
    per_eval = args.n_steps / args.evals  # the Zoo reports the evaluation's index
    for t in result["trials"]:
        t["steps"] = (t.pop("last_report") or 0) * per_eval
    return result


def summary(result: dict) -> dict:
    trials = result["trials"]
    states = [t["state"] for t in trials]
    values = [t["value"] for t in trials if t["state"] == "COMPLETE" and t["value"] is not None]
    solved_at = [t["end"] - result["started"] for t in trials
                 if t["state"] == "COMPLETE" and t["value"] is not None
                 and t["value"] >= SOLVED and t["end"]]
    ended = states.count("COMPLETE") + states.count("PRUNED")
    return dict(wall_min=result["wall_s"] / 60, complete=states.count("COMPLETE"),
                pruned=states.count("PRUNED"), failed=states.count("FAIL"),
                per_hour=ended / (result["wall_s"] / 3600),
                env_steps=sum(t["steps"] for t in trials),
                best=max(values) if values else float("nan"),
                solved=len(solved_at),
                first_solved_min=min(solved_at) / 60 if solved_at else float("nan"))


ROWS = [("wall time (min)", "wall_min", "{:.1f}"), ("trials complete", "complete", "{}"),
        ("trials pruned", "pruned", "{}"), ("trials failed", "failed", "{}"),
        ("trials ended per hour", "per_hour", "{:.1f}"),
        ("env steps of all trials", "env_steps", "{:,.0f}"),
        ("best objective", "best", "{:.1f}"),
        (f"complete trials at >= {SOLVED:.0f}", "solved", "{}"),
        (f"minutes to the first trial at >= {SOLVED:.0f}", "first_solved_min", "{:.1f}")]


def table(sides: dict) -> str:
    names = list(sides)
    lines = ["| | " + " | ".join(names) + (" | ours / Zoo |" if len(names) == 2 else " |"),
             "|---" * (len(names) + 1 + (len(names) == 2)) + "|"]
    for label, key, fmt in ROWS:
        cells = [fmt.format(sides[n][key]) for n in names]
        if len(names) == 2:
            a, b = sides[names[0]][key], sides[names[1]][key]
            cells.append(f"{a / b:.2f}" if b and b == b and a == a else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=16)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--n-steps", type=int, default=50_000)
    p.add_argument("--evals", type=int, default=10, help="evaluations (log rows) per trial")
    p.add_argument("--seed", type=int, default=0, help="both samplers' seed")
    p.add_argument("--out", default="runs/zoo_tune")
    p.add_argument("--sides", nargs="+", default=["rlpyt", "zoo"], choices=["rlpyt", "zoo"])
    p.add_argument("--md", default=None, help="also write the table to this file")
    args = p.parse_args()
    out = os.path.abspath(args.out)
    sides = {}
    for side in args.sides:
        shutil.rmtree(os.path.join(out, side), ignore_errors=True)
        result = run_ours(args, out) if side == "rlpyt" else run_zoo(args, out)
        if result is None:
            print(f"{side}: no result (see above)")
            continue
        with open(os.path.join(out, f"{side}.json"), "w") as f:
            json.dump(result, f, indent=1)
        sides[side] = summary(result)
        print(f"{side}: {json.dumps(sides[side])}", flush=True)
    text = (f"PPO on CartPole-v1, {args.trials} trials, {args.jobs} at once, "
            f"{args.n_steps:,} steps and {args.evals} evaluations each\n\n{table(sides)}")
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
