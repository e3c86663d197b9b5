"""``rlpyt train``: build a run from a preset plus overrides, train it, report."""

from __future__ import annotations

import argparse
import os
import traceback

from rlpyt.cli.components import (
    SAMPLERS,
    build_components,
    runner_path,
)
from rlpyt.cli.config import build_config, load_run_config, resume_config
from rlpyt.cli.overrides import ConfigError, parse_override_args
from rlpyt.cli.presets import (
    PRESETS,
    env_family,
    import_path,
    preset_for,
)
from rlpyt.cli.run_affinity import rank_affinities, run_affinity
from rlpyt.cli.run_folder import (
    default_run_name,
    new_run_location,
    run_dir_of,
    writes_run_dir,
)
from rlpyt.cli.run_folder_lock import locked_run_dir
from rlpyt.cli.train_report import report_config_error, report_interrupt, report_result
from rlpyt.utils.process import launched_by_torchrun

__all__ = ["add_train_parser", "build_config", "load_run_config", "run_train",
           "train_from_config"]

_rank_affinities = rank_affinities  # the name tests/test_sync_rl.py imports from here

def _positive(kind):
    """argparse type: a number of ``kind`` that is > 0 (``--n-steps 0`` is an error)."""
    def parse(text: str):
        try:
            value = kind(float(text)) if kind is int and "e" in text.lower() else kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} must be > 0")
        return value
    parse.__name__ = f"positive {kind.__name__}"
    return parse


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be >= 0")
    return value


def add_train_parser(subparsers):
    p = subparsers.add_parser(
        "train",
        help="train an agent (default: PPO on CartPole-v1)",
        description="Train an agent. Any component keyword can be set as "
        "--algo.KEY VALUE, --agent.KEY VALUE, --sampler.KEY VALUE, --runner.KEY VALUE or "
        "--env.KEY VALUE (nested: --agent.model_kwargs.hidden_sizes [64,64]).",
    )
    p.add_argument("--algo", default="ppo", choices=sorted(PRESETS), help="algorithm preset")
    p.add_argument("--env", default=None, help="Gymnasium env id (default: the preset's)")
    p.add_argument("--n-steps", type=_positive(float), default=None,
                   help="env steps to train for (> 0)")
    p.add_argument("--seed", type=int, default=None,
                   help="run seed (default: the --config run's seed, else 0)")
    p.add_argument("--log-dir", default=None, help="run directory root (default runs/<algo>_<env>)")
    p.add_argument("--run-id", type=_non_negative_int, default=None,
                   help="run index within the log dir (default: one more than the highest "
                        "run_<k> there, so a repeated command starts a new run; 0 under "
                        "torchrun, where every rank must name the same run)")
    p.add_argument("--sampler-type", default="serial", choices=sorted(SAMPLERS),
                   help="serial (default): envs in this process; cpu: envs and agent copies "
                        "in worker processes; gpu: envs in workers, batched actions here; "
                        "alternating[-no-overlap]: two groups of gpu workers in turn")
    p.add_argument("--runner", default="sync", choices=["sync", "async"],
                   help="async: sample and optimize at once in separate processes "
                        "(replay-based algorithms and impala; see docs/async.md)")
    p.add_argument("--workers", type=_positive(int), default=None,
                   help="worker processes of the parallel samplers (>= 1; default: all CPUs)")
    p.add_argument("--actors", type=_positive(int), default=None,
                   help="Ray actors of --sampler-type ray (default 2; see docs/distributed.md)")
    p.add_argument("--ray-address", default=None,
                   help="Ray cluster of --sampler-type ray: 'auto' (the cluster `ray start` "
                        "made), HOST:PORT, or unset for a private local Ray")
    p.add_argument("--cuda-idx", type=_non_negative_int, default=None,
                   help="GPU index for training (default: CPU)")
    p.add_argument("--torch-threads", type=_positive(int), default=None,
                   help="torch threads of the main process (default: the preset's; 1, "
                        "fastest for small models, or every CPU for the conv nets of PPO's "
                        "Atari preset in a synchronous run, whose workers wait while it "
                        "optimizes)")
    p.add_argument("--config", default=None,
                   help="params.json of an earlier run: start from its full config")
    p.add_argument("--snapshot-mode", default="last",
                   choices=["all", "last", "gap", "last+gap", "none"],
                   help="agent snapshots at each log row: last (default): params.pkl, "
                        "overwritten; all: itr_<N>.pkl each; gap/last+gap: every "
                        "snapshot_gap rows; none. Checkpoints for --resume are separate")
    p.add_argument("--tensorboard", action="store_true",
                   help="also write TensorBoard event files into the run directory "
                        "(view: tensorboard --logdir <log-dir>)")
    p.add_argument("--resume", default=None, metavar="RUN_DIR",
                   help="continue the run in RUN_DIR from its latest checkpoint, with its "
                        "saved config (only --n-steps may change, to train longer)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show full tracebacks of errors")
    p.add_argument("--nproc", type=int, default=1,
                   help="data-parallel ranks on this machine (SyncRl; default 1: no "
                        "distribution); under torchrun the job's ranks are used instead")
    p.set_defaults(handler=run_train)
    return p


def _log_preset(config: dict) -> None:
    """The start line: which preset was chosen and where its values come from."""
    from rlpyt.utils.logging import logger

    env_id = config["env"]["id"]
    family = env_family(env_id)
    preset = preset_for(config["algo_name"], env_id)
    source = preset.source_for(env_id)
    source = f", values from {source}" if source else ""
    logger.log(f"Preset: {config['algo_name']} for {family} ids{source}.")
    if family == "atari":
        from rlpyt.envs.atari.ids import atari_protocol

        logger.log(f"Env: {atari_protocol(env_id).describe()}.")


def train_from_config(config: dict, log_dir: str, run_ID: int = 0,
                      snapshot_mode: str = "last", resume: bool | None = None) -> dict:
    """Build every component from ``config`` and train under a logger context.

    ``resume``: continue the run in ``<log_dir>/run_<run_ID>`` from its checkpoint;
    None (default): as the ``RLPYT_RESUME`` environment variable says (set by the
    experiment launcher for the runs it continues), see ``logger_context``.
    """
    from rlpyt.runners.preflight import check_before_start
    from rlpyt.utils.logging.context import logger_context

    env_kwargs = dict(config["env"])
    sampler, agent, algo = build_components(config)
    distributed = config.get("nproc", 1) > 1 or launched_by_torchrun()
    RunnerCls = import_path(runner_path(config, distributed))
    affinity = rank_affinities(config) if distributed else run_affinity(config)
    runner = RunnerCls(algo=algo, agent=agent, sampler=sampler, seed=config.get("seed"),
                       affinity=affinity, **config["runner"])
    # Bad settings fail here, before the run directory is touched.
    check_before_start(algo, agent, sampler, runner.n_steps,
                       affinity[0] if distributed else affinity)
    if not writes_run_dir():
        return runner.train()  # rank 0 alone writes the run directory
    name = default_run_name(config["algo_name"], env_kwargs["id"])
    with logger_context(log_dir, run_ID, name, log_params=dict(config=config),
                        snapshot_mode=snapshot_mode, override_prefix=True, resume=resume,
                        use_summary_writer=bool(config.get("tensorboard"))) as run_dir:
        try:
            _log_preset(config)
            return _train_with_row_lines(runner)
        except Exception:
            _log_traceback(run_dir)
            raise


def _train_with_row_lines(runner) -> dict:
    """Train, printing one terminal line per log row; debug.log gets the whole table."""
    from rlpyt.utils.logging import logger

    logger.log(f"Log rows: one line each here; every column is in "
               f"{os.path.join(logger.get_snapshot_dir() or '.', 'debug.log')} and "
               f"progress.csv.")
    logger.set_terminal_rows("line")
    try:
        return runner.train()
    finally:
        logger.set_terminal_rows("table")


def _log_traceback(run_dir: str) -> None:
    """The full traceback of the failure into the run's ``debug.log`` (the command line
    prints one line; ``--debug`` prints the traceback)."""
    try:
        with open(os.path.join(run_dir, "debug.log"), "a") as f:
            f.write(f"The run failed:\n{traceback.format_exc()}")
    except OSError:
        pass


def run_train(args, extra: list[str]) -> int:
    try:  # refused before the run directory's lock makes anything
        run_dir = run_dir_of(args)
        parse_override_args(extra)
    except ConfigError as e:
        return report_config_error(e)
    with locked_run_dir(run_dir, bool(args.resume)):
        try:
            if args.resume:
                config, log_dir, run_id = resume_config(args, extra, run_dir)
            else:
                config = build_config(args, extra)
                log_dir, run_id = new_run_location(args, config)
        except ConfigError as e:
            return report_config_error(e)
        try:
            summary = train_from_config(config, log_dir, run_id, args.snapshot_mode,
                                        resume=True if args.resume else None)
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: say how to go on
            if writes_run_dir():  # rank 0 says it
                report_interrupt(os.path.join(log_dir, f"run_{run_id}"))
            return 128 + getattr(e, "signum", 2)  # 130 (SIGINT) or 143 (SIGTERM)
    if not writes_run_dir():
        return 0  # rank 0 reports
    report_result(summary, os.path.join(log_dir, f"run_{run_id}"))
    return 0
