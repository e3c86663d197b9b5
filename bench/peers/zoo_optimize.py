"""The RL Baselines3 Zoo's ``--optimize`` on a given search space, for ``bench/zoo/zoo_tune.py``.

Run in the Zoo's venv (``bench/peers/``).  The Zoo's PPO search space is fixed in
``rl_zoo3.hyperparams_opt`` (eleven dimensions); for a side by side with ``rlpyt tune``
over the same dimensions, this script puts a sampler of the dimensions given in
``--space`` (JSON: ``[[name, kind, low, high], ...]``, kind ``loguniform`` or
``uniform``) in its place, then runs the Zoo's own command line (``rl_zoo3.train``) with
the arguments after ``--``, and prints the study's trials from its storage as one
``PEER_RESULT`` line: each trial's state, value, start and end, and last reported step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def sampler_of(space: list) -> callable:
    """A Zoo hyperparameter sampler drawing ``space``'s dimensions, each under its name."""

    def sample(trial, n_actions, n_envs, additional_args):
        drawn = {}
        for name, kind, low, high in space:
            drawn[name] = trial.suggest_float(name, low, high, log=kind == "loguniform")
        return drawn

    return sample


def trials_of(storage: str, study_name: str) -> list[dict]:
    import optuna

    study = optuna.load_study(study_name=study_name, storage=storage)
    out = []
    for t in study.trials:
        steps = sorted(t.intermediate_values)
        out.append(dict(number=t.number, state=t.state.name, value=t.value,
                        params=t.params,
                        start=t.datetime_start.timestamp() if t.datetime_start else None,
                        end=t.datetime_complete.timestamp() if t.datetime_complete else None,
                        last_report=steps[-1] if steps else None))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--space", required=True, help="JSON list of [name, kind, low, high]")
    p.add_argument("--storage", required=True)
    p.add_argument("--study-name", required=True)
    args, zoo_args = p.parse_known_args()
    zoo_args = [a for a in zoo_args if a != "--"]

    from rl_zoo3 import hyperparams_opt
    from rl_zoo3 import train as zoo_train

    # The experiment manager reads this same dict at each trial.
    hyperparams_opt.HYPERPARAMS_SAMPLER["ppo"] = sampler_of(json.loads(args.space))
    sys.argv = ["rl_zoo3.train", *zoo_args, "--storage", args.storage,
                "--study-name", args.study_name]
    started = time.time()
    zoo_train.train()
    wall = time.time() - started
    print("PEER_RESULT " + json.dumps(dict(wall_s=wall, started=started,
                                           trials=trials_of(args.storage, args.study_name))),
          flush=True)


if __name__ == "__main__":
    main()
