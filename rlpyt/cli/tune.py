"""``rlpyt tune``: search ``rlpyt train``'s flags with an Optuna study.

Every flag after the tuner's own goes to ``rlpyt train``; a value written as a
distribution is searched (``rlpyt.experiments.search_space``)::

    rlpyt tune --study runs/tune_ppo --trials 20 --jobs 2 --algo ppo --env CartPole-v1 \\
        --n-steps 50000 --algo.learning_rate 'loguniform(1e-5,1e-2)' \\
        --sampler.batch_B 'choice(8,16,32)'

The flags are checked, as ``rlpyt train`` would, before any trial starts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

__all__ = ["add_tune_parser", "run_tune"]

# Flags the tuner sets for each run itself.
_OWN_TRAIN_FLAGS = ("--seed", "--log-dir", "--run-id", "--resume", "--nproc")


def add_tune_parser(subparsers):
    from rlpyt.experiments.study import PRUNERS, SEARCHES

    p = subparsers.add_parser(
        "tune",
        help="search rlpyt train's flags with an Optuna study (pruned, resumable, parallel)",
        description="An Optuna study over rlpyt train's flags: every flag after the tuner's "
        "own goes to rlpyt train, and a value written as loguniform(a,b), uniform(a,b), "
        "int(a,b) or choice(x,y,...) is searched.  Each trial runs rlpyt train once per "
        "seed in <study>/trial_<k>/run_<seed>; a study started again on its folder goes on.",
        allow_abbrev=False,  # --seed (refused, the tuner sets it) must not become --seeds
    )
    p.add_argument("--study", required=True, metavar="DIR",
                   help="the study's folder: trials, study.db, plots")
    p.add_argument("--trials", type=int, required=True,
                   help="trials to finish, those of earlier starts of the study included")
    p.add_argument("--jobs", type=int, default=1, help="trials at once (default 1)")
    p.add_argument("--seeds", type=int, default=1,
                   help="runs per trial, seeds 0..SEEDS-1; the objective is their mean "
                        "(default 1)")
    p.add_argument("--objective", default="ReturnAverage",
                   help="the progress.csv column to optimize (default ReturnAverage)")
    p.add_argument("--last", type=int, default=3,
                   help="rows at the end of each run the objective averages (default 3)")
    p.add_argument("--auc", action="store_true",
                   help="average over every row instead: the area under the curve")
    p.add_argument("--minimize", action="store_true", help="minimize instead of maximize")
    p.add_argument("--pruner", default="median", choices=PRUNERS,
                   help="median (default), halving (successive halving) or none")
    p.add_argument("--search", default="tpe", choices=SEARCHES,
                   help="the sampler: tpe (default) or random")
    p.add_argument("--startup-trials", type=int, default=10,
                   help="random trials before TPE models the results (default 10)")
    p.add_argument("--prune-startup-trials", type=int, default=5,
                   help="trials the median pruner lets finish before it prunes (default 5)")
    p.add_argument("--warmup-steps", type=float, default=None,
                   help="env steps of a run before it may be pruned (default: a third "
                        "of --n-steps, as the RL Zoo)")
    p.add_argument("--space", default=None, metavar="FILE",
                   help="a Python file defining space(trial) -> dict of flag keys to "
                        "values, for spaces a flag cannot write (conditional ones)")
    p.add_argument("--storage", default=None, metavar="URL",
                   help="an Optuna storage URL (default sqlite:///<study>/study.db)")
    p.add_argument("--study-name", default=None,
                   help="the study's name in the storage (default: the folder's name)")
    p.add_argument("--tune-seed", type=int, default=0, help="the sampler's seed (default 0)")
    p.add_argument("--backend", default="local", choices=["local", "ray"],
                   help="local (default): trials on this machine's cores, pinned; ray: "
                        "--jobs tuners as Ray tasks sharing the study's storage")
    p.add_argument("--ray-address", default=None,
                   help="the Ray cluster to join ('auto': the one running on this machine; "
                        "default: start a local Ray of the tuner's own)")
    p.add_argument("--dashboard", action="store_true",
                   help="serve optuna-dashboard on the study while it runs (needs "
                        "pip install optuna-dashboard)")
    p.set_defaults(handler=run_tune)
    return p


def _error(message: str) -> int:
    print(f"rlpyt tune: error: {message}", file=sys.stderr)
    return 2


def _train_parser() -> argparse.ArgumentParser:
    from rlpyt.cli import _Parser
    from rlpyt.cli.train import add_train_parser

    holder = _Parser(prog="rlpyt").add_subparsers()
    return add_train_parser(holder)


def _check_train_flags(train_args, fixed: list[str], samples: list[dict]) -> dict:
    """Build ``rlpyt train``'s config with each sample of the searched flags, as a run
    would (unknown keys and bad values are refused here); returns the first config."""
    from rlpyt.cli.overrides import ConfigError
    from rlpyt.cli.presets import resolve_classes
    from rlpyt.cli.train import build_config
    from rlpyt.experiments.search_space import as_flags

    configs = [build_config(train_args, [*fixed, *as_flags(sample)]) for sample in samples]
    for config in configs:
        try:
            resolve_classes(config["agent"], "agent")
            resolve_classes(config["algo"], "algo")
        except ValueError as e:
            raise ConfigError(str(e)) from None
    return configs[0]


def _dimension_samples(dims) -> list[dict]:
    """Each searched flag at each end of its range and at each choice."""
    samples = []
    for dim in dims:
        values = dim.choices if dim.kind == "choice" else (dim.low, dim.high)
        for value in values:
            samples.append({d.key: (value if d is dim else _first(d)) for d in dims})
    return samples


def _first(dim):
    return dim.choices[0] if dim.kind == "choice" else dim.low


def _space_sample(space) -> dict:
    """One draw of a ``space(trial)`` function, from a throwaway in-memory study."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return space(optuna.create_study().ask())


def run_tune(args, extra: list[str]) -> int:
    from rlpyt.cli.overrides import ConfigError
    from rlpyt.experiments.search_space import (
        SearchSpaceError,
        load_space_file,
        split_search_flags,
    )
    from rlpyt.experiments.study import TuneSettings, best_command, run_study, write_plots

    own = [flag for flag in extra if flag.split("=", 1)[0] in _OWN_TRAIN_FLAGS]
    if own:
        return _error(f"{own[0].split('=', 1)[0]} is set by the tuner for each run (seeds "
                      f"0..--seeds-1, folders <study>/trial_<k>/run_<seed>); leave it out")
    for name, value, low in (("--trials", args.trials, 1), ("--jobs", args.jobs, 1),
                             ("--seeds", args.seeds, 1), ("--last", args.last, 1),
                             ("--startup-trials", args.startup_trials, 0),
                             ("--prune-startup-trials", args.prune_startup_trials, 0)):
        if value < low:
            return _error(f"{name} {value}: must be >= {low}")
    if args.dashboard and shutil.which("optuna-dashboard") is None:
        return _error("--dashboard: optuna-dashboard is not installed (pip install "
                      "optuna-dashboard), or watch the study with it from elsewhere")
    try:
        import optuna  # noqa: F401
    except ImportError:
        return _error("optuna is not installed (pip install optuna)")
    try:
        fixed, dims = split_search_flags(extra)
        try:
            train_args, component_flags = _train_parser().parse_known_args(fixed)
        except SystemExit as e:  # a usage error of train's own flags, printed
            return int(e.code or 2)
        space = load_space_file(args.space) if args.space else None
        if space is not None and dims:
            raise SearchSpaceError(f"--space {args.space} and searched flags "
                                   f"({', '.join('--' + d.key for d in dims)}): use one")
        if space is None and not dims:
            raise SearchSpaceError("nothing to search: write a flag's value as "
                                   "loguniform(a,b), uniform(a,b), int(a,b) or "
                                   "choice(x,y,...), or give --space FILE")
        samples = [_space_sample(space)] if space else _dimension_samples(dims)
        config = _check_train_flags(train_args, component_flags, samples)
    except (SearchSpaceError, ConfigError) as e:
        return _error(str(e))
    n_steps = int(config["runner"]["n_steps"])
    warmup = int(args.warmup_steps) if args.warmup_steps is not None else n_steps // 3
    settings = TuneSettings(
        study_dir=args.study, trials=args.trials, train_flags=tuple(fixed),
        dims=tuple(dims), space=space,
        space_file=os.path.abspath(args.space) if args.space else None, jobs=args.jobs,
        seeds=args.seeds, objective=args.objective, last=args.last, auc=args.auc,
        direction="minimize" if args.minimize else "maximize", pruner=args.pruner,
        search=args.search, startup_trials=args.startup_trials,
        prune_startup_trials=args.prune_startup_trials, warmup_steps=warmup,
        storage=args.storage, study_name=args.study_name, tune_seed=args.tune_seed)
    print(f"Study {settings.name!r} in {settings.storage_url}: {args.trials} trials, "
          f"{args.jobs} at once, {args.seeds} seed(s) each; {settings.direction} "
          f"{args.objective} ({'every row' if args.auc else f'last {args.last} rows'}); "
          f"pruner {args.pruner} after {warmup} steps")
    print(f"Live view: optuna-dashboard {settings.storage_url}")
    dashboard = _start_dashboard(settings.storage_url) if args.dashboard else None
    try:
        if args.backend == "ray":
            from rlpyt.experiments.study_ray import run_study_on_ray

            study = run_study_on_ray(settings, args.ray_address,
                                     say=lambda line: print(line, flush=True))
        else:
            study = run_study(settings, say=lambda line: print(line, flush=True))
    except ValueError as e:
        return _error(str(e))
    finally:
        if dashboard is not None:
            dashboard.terminate()
    _report(study, settings, best_command, write_plots)
    return 0


def _start_dashboard(url: str) -> subprocess.Popen:
    print("optuna-dashboard serves the study at http://127.0.0.1:8080 while the tuner runs")
    return subprocess.Popen(["optuna-dashboard", url], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _report(study, settings, best_command, write_plots) -> None:
    import optuna

    counts = {state.name.lower(): len(study.get_trials(deepcopy=False, states=(state,)))
              for state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
                            optuna.trial.TrialState.FAIL)}
    print(f"Trials: {counts['complete']} complete, {counts['pruned']} pruned, "
          f"{counts['fail']} failed (interrupted ones included)")
    command = best_command(study, settings)
    if command is None:
        print("No trial completed: no best trial.")
        return
    best = study.best_trial
    print(f"Best: trial {best.number}, {settings.objective} {best.value:.4g} "
          f"({best.user_attrs.get('trial_dir')})")
    print(f"  {command}")
    with open(os.path.join(settings.study_dir, "best_command.txt"), "w") as f:
        f.write(command + "\n")
    for path in write_plots(study, settings.study_dir):
        print(f"Wrote {os.path.abspath(path)}")
