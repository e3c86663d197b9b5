"""Which run directory a ``rlpyt train`` command writes: ``<log dir>/run_<id>``, the
log dir by default ``runs/<algo>_<env id>`` and the id by default the next free one.

It is worked out from the flags alone, before anything is built, so that the
directory's lock (``rlpyt.cli.run_folder_lock``) is held from the command's start, and
a path that cannot be a run directory is refused with one line before any work.
"""

from __future__ import annotations

import argparse
import os

from rlpyt.cli.config import load_run_config
from rlpyt.cli.overrides import ConfigError
from rlpyt.cli.presets import preset_for
from rlpyt.utils.logging.run_dir import next_run_id
from rlpyt.utils.process import launched_by_torchrun

__all__ = ["default_run_id", "default_run_name", "new_run_location", "resume_dir",
           "run_dir_of", "writes_run_dir"]


def default_run_name(algo: str, env_id: str) -> str:
    """``<algo>_<env id>`` with the id's namespace slash as a dash (``ppo_ALE-Pong-v5``):
    one folder per run name, never a nested one."""
    return f"{algo}_{env_id}".replace("/", "-")


def default_run_id(log_dir: str) -> int:
    """The next free run id; 0 under torchrun, where every rank must name the same run
    without talking to the others first (a relaunch continues it with --resume)."""
    return 0 if launched_by_torchrun() else next_run_id(log_dir)


def writes_run_dir() -> bool:
    """Whether this process writes the run directory (and reports on it): rank 0
    alone does under torchrun, its other ranks only train."""
    return not (launched_by_torchrun() and int(os.environ["RANK"]) != 0)


def run_dir_of(args: argparse.Namespace) -> str | None:
    """The run directory this command will write, worked out from the flags alone (no
    env, no torch), so that its lock is taken before anything is built; None where it
    cannot be known yet (the error then comes from ``build_config``).  A ``ConfigError``
    when the flags name a path that cannot be that directory."""
    if args.resume:
        return resume_dir(args.resume)
    log_dir = args.log_dir
    if log_dir is None:
        try:
            algo = load_run_config(args.config)["algo_name"] if args.config else args.algo
            env_id = args.env or (load_run_config(args.config)["env"]["id"] if args.config
                                  else preset_for(algo, args.env).env)
        except (ConfigError, KeyError, TypeError):
            return None
        log_dir = os.path.join("runs", default_run_name(algo, env_id))
    _check_makeable_dir("--log-dir", args.log_dir, log_dir)
    if args.run_id is None:  # fixed now: the lock will make its dir
        args.run_id = default_run_id(log_dir)
    run_dir = os.path.join(log_dir, f"run_{args.run_id}")
    _check_makeable_dir("--run-id", str(args.run_id), run_dir,
                        "choose another --run-id, or move the file away")
    return os.path.abspath(run_dir)


def new_run_location(args: argparse.Namespace, config: dict) -> tuple[str, int]:
    """``(log dir, run id)`` of a new run of ``config``: the flags', else
    ``runs/<algo>_<env id>`` and the next free id there."""
    log_dir = args.log_dir or os.path.join(
        "runs", default_run_name(config["algo_name"], config["env"]["id"]))
    run_id = args.run_id if args.run_id is not None else default_run_id(log_dir)
    return log_dir, run_id


def resume_dir(typed: str) -> str:
    """The run directory ``--resume`` names; a ``ConfigError`` unless it is one."""
    run_dir = os.path.abspath(typed)
    if os.path.isdir(run_dir):
        return run_dir
    valid = "give the run_<k> directory of an earlier run (it holds params.json)"
    if not os.path.exists(run_dir):
        raise ConfigError(f"--resume {typed!r}: no such run directory; {valid}")
    if os.path.basename(run_dir) == "params.json":
        valid = f"give the run directory that holds it, {os.path.dirname(run_dir)!r}"
    raise ConfigError(f"--resume {typed!r}: a file, not a run directory; {valid}")


def _check_makeable_dir(flag: str, typed: str | None, path: str,
                        valid: str = "give a directory (made if missing) to hold the run "
                                     "folders") -> None:
    """Refuse ``path`` when it, or the nearest of its parents that exists, is not a
    directory (the lock could not make it); ``typed`` is the flag's value as given
    (None: the flag was not given and ``path`` is its default), ``valid`` what to do."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if os.path.isdir(existing):
        return
    given = f"{flag} {typed!r}" if typed is not None else f"{flag} (default {path!r})"
    named = existing == os.path.abspath(path) and typed in (None, path)
    problem = "a file" if named else f"{existing!r} is a file"
    raise ConfigError(f"{given}: {problem}, not a directory; {valid}")
