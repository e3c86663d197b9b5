"""``rlpyt train``: build a run from a preset plus overrides, train it, report.

``run_train`` is the command, read top to bottom; each of its steps has a module
beside this one:

- ``train_args``: the flags and their types;
- ``config``: the run's config, from the preset, a loaded config and the flags;
- ``components`` and ``component_keywords``: the classes a config names, the keywords
  each accepts, and the sampler, agent and algorithm built from them;
- ``run_affinity``: the GPU, CPUs and torch threads of the run, split among its ranks;
- ``run_folder`` and ``run_folder_lock``: the run directory, and its lock held from
  the start;
- ``train_report``: what the command prints at its end.

``build_config``, ``build_components``, ``load_run_config`` and ``default_run_name``
are importable from here as before.
"""

from __future__ import annotations

import argparse
import os
import traceback

from rlpyt.cli.components import build_components, runner_path
from rlpyt.cli.config import build_config, load_run_config, resume_config
from rlpyt.cli.overrides import ConfigError, parse_override_args
from rlpyt.cli.presets import env_family, import_path, preset_for
from rlpyt.cli.run_affinity import rank_affinities, run_affinity
from rlpyt.cli.run_folder import default_run_name, new_run_location, run_dir_of, writes_run_dir
from rlpyt.cli.run_folder_lock import locked_run_dir
from rlpyt.cli.train_args import train_parser
from rlpyt.cli.train_report import report_config_error, report_interrupt, report_result
from rlpyt.utils.process import launched_by_torchrun

__all__ = ["add_train_parser", "build_components", "build_config", "default_run_name",
           "load_run_config", "run_train", "train_from_config"]

def add_train_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``train`` command, with its flags (``rlpyt.cli.train_args``), to
    ``subparsers``; returns its parser."""
    p = train_parser(subparsers)
    p.set_defaults(handler=run_train)
    return p


def run_train(args: argparse.Namespace, extra: list[str]) -> int:
    """The ``rlpyt train`` command; its exit code: 0, 2 for a bad config, 130 or 143
    when Ctrl-C or SIGTERM stops the run (other errors go up to ``rlpyt.cli.main``,
    which reports them).  ``extra``: the component keywords argparse leaves over."""
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
