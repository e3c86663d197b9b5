"""``rlpyt launch GRID.py``: run a grid file without writing launcher boilerplate.

A grid file is a Python file that defines these names (others are ignored)::

    script = "train_grid_ppo.py"   # required; relative to the grid file's folder
    variants = [VariantLevel(...), VariantLevel(...)]   # required: the levels, or
    #   variants = [dict, ...] together with log_dirs = [str, ...]
    affinity = dict(n_cpu_core=8, cpu_per_run=2)       # required: encode_affinity
    #   keywords, or affinity_code = "8cpu_2cpr"
    runs_per_setting = 2           # optional, default 1 (run ids 0..n-1)
    experiment_title = "grid_ppo"  # optional, default: the grid file's name
    common_args = ["--n-steps", "50000"]   # optional, passed to every run
    runs_args = None               # optional, one argument list per setting
    exp_dir = None                 # optional, default data/local/<experiment_title>
    backend = "local"              # optional, or "ray"
    ray_address = None             # optional, a Ray cluster to join

``launch_grid(path, **overrides)`` replaces any of these names; the command line
can override ``affinity_code``, ``runs_per_setting``, ``exp_dir``, ``backend`` and
``ray_address``, and appends arguments after ``--`` to ``common_args``.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Sequence
from typing import Any

from rlpyt.utils.launching.affinity import encode_affinity
from rlpyt.utils.launching.exp_launcher import ExperimentSummary, run_experiments
from rlpyt.utils.launching.variant import VariantLevel, make_variants

__all__ = ["GRID_NAMES", "add_launch_subparser", "launch_grid", "load_grid", "run_launch"]

REQUIRED = ("script", "variants")
OPTIONAL = dict(
    affinity=None,
    affinity_code=None,
    log_dirs=None,
    runs_per_setting=1,
    experiment_title=None,
    common_args=None,
    runs_args=None,
    exp_dir=None,
    backend="local",
    ray_address=None,
)
GRID_NAMES = (*REQUIRED, *OPTIONAL)


def load_grid(grid_path: str, **overrides: Any) -> dict[str, Any]:
    """The grid file's settings (with ``overrides`` applied) as ``run_experiments`` keywords.

    Raises:
        FileNotFoundError: the grid file or its script does not exist.
        ValueError: a required name is missing, an override is unknown, or the
            variants or resources are malformed.
    """
    if not os.path.isfile(grid_path):
        raise FileNotFoundError(f"grid file {grid_path!r} does not exist")
    unknown = sorted(set(overrides) - set(GRID_NAMES))
    if unknown:
        raise ValueError(f"unknown grid overrides {unknown}; valid names: {list(GRID_NAMES)}")
    namespace = runpy.run_path(grid_path, run_name="__grid__")
    grid = {name: namespace.get(name, default) for name, default in OPTIONAL.items()}
    grid.update({name: namespace[name] for name in REQUIRED if name in namespace})
    # An override of either form of the resources replaces the file's other form.
    if "affinity_code" in overrides and "affinity" not in overrides:
        grid["affinity"] = None
    if "affinity" in overrides and "affinity_code" not in overrides:
        grid["affinity_code"] = None
    grid.update(overrides)
    missing = [name for name in REQUIRED if name not in grid]
    if missing:
        raise ValueError(f"grid file {grid_path!r} does not define {missing}; see "
                         f"`rlpyt launch --help` for the names a grid file sets")

    grid_dir = os.path.dirname(os.path.abspath(grid_path))
    script = os.path.join(grid_dir, os.path.expanduser(str(grid["script"])))
    if not os.path.isfile(script):
        raise FileNotFoundError(f"script={grid['script']!r} of grid {grid_path!r} is not a "
                                f"file (looked at {script})")
    variants, log_dirs = _variants(grid["variants"], grid["log_dirs"], grid_path)
    title = grid["experiment_title"] or os.path.splitext(os.path.basename(grid_path))[0]
    return dict(
        script=script,
        affinity_code=_affinity_code(grid["affinity"], grid["affinity_code"], grid_path),
        experiment_title=title,
        runs_per_setting=grid["runs_per_setting"],
        variants=variants,
        log_dirs=log_dirs,
        common_args=list(grid["common_args"] or []),
        runs_args=grid["runs_args"],
        exp_dir=grid["exp_dir"],
        backend=grid["backend"],
        ray_address=grid["ray_address"],
    )


def _variants(variants, log_dirs, grid_path):
    items = list(variants)
    if items and all(isinstance(v, VariantLevel) for v in items):
        if log_dirs is not None:
            raise ValueError(f"grid {grid_path!r}: log_dirs come from the VariantLevels; "
                             f"drop log_dirs or give variants as dicts")
        return make_variants(*items)
    if items and all(isinstance(v, dict) for v in items):
        if log_dirs is None:
            raise ValueError(f"grid {grid_path!r}: variants given as dicts need log_dirs "
                             f"(one directory per variant)")
        return items, list(log_dirs)
    raise ValueError(f"grid {grid_path!r}: variants must be a non-empty list of VariantLevel "
                     f"(or of dicts, with log_dirs)")


def _affinity_code(affinity, affinity_code, grid_path) -> str:
    if (affinity is None) == (affinity_code is None):
        raise ValueError(
            f"grid {grid_path!r} must set exactly one of affinity (encode_affinity keywords, "
            f"e.g. dict(n_cpu_core=8, cpu_per_run=2)) or affinity_code (e.g. '8cpu_2cpr')"
        )
    if affinity_code is not None:
        return str(affinity_code)
    if not isinstance(affinity, dict):
        raise ValueError(f"grid {grid_path!r}: affinity={affinity!r} must be a dict of "
                         f"encode_affinity keywords")
    return encode_affinity(**affinity)


def launch_grid(
    grid_path: str, extra_args: Sequence[str] = (), **overrides: Any
) -> ExperimentSummary:
    """Run the grid file ``grid_path`` (see the module doc); returns its summary.

    Args:
        grid_path: the grid file.
        extra_args: arguments appended to the grid's ``common_args``.
        **overrides: replace names the grid file sets (``affinity_code="2cpu"``,
            ``exp_dir=...``, ``backend="ray"``, ...). Setting ``affinity_code``
            replaces an ``affinity`` dict of the file, and the reverse.
    """
    grid = load_grid(grid_path, **overrides)
    grid["common_args"] = [*grid["common_args"], *map(str, extra_args)]
    return run_experiments(**grid)


def add_launch_subparser(subparsers) -> argparse.ArgumentParser:
    """Add ``launch`` to the ``rlpyt`` command's subcommands."""
    parser = subparsers.add_parser(
        "launch",
        help="run a grid of experiments from a grid file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("grid", metavar="GRID.py", help="grid file")
    parser.add_argument("--affinity-code", default=None,
                        help="layout of this machine, e.g. 8cpu_2cpr (replaces the grid's)")
    parser.add_argument("--runs-per-setting", type=int, default=None)
    parser.add_argument("--exp-dir", default=None,
                        help="experiment directory; the same one again resumes the grid")
    parser.add_argument("--backend", choices=("local", "ray"), default=None)
    parser.add_argument("--ray-address", default=None,
                        help="Ray cluster to join (default: a local Ray instance)")
    parser.set_defaults(handler=run_launch)
    return parser


def run_launch(args: argparse.Namespace, extra: list[str] | None = None) -> int:
    """Handler of ``rlpyt launch``.

    ``extra`` (arguments after ``--``) is appended to the grid's ``common_args``.

    Returns:
        0 when every run is complete, 1 when a run failed or did not run, 2 when the
        grid could not be launched (the reason is printed), 130 after Ctrl-C.
    """
    names = ("affinity_code", "runs_per_setting", "exp_dir", "backend", "ray_address")
    overrides = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    extra = list(extra or [])
    if extra[:1] == ["--"]:
        extra = extra[1:]
    try:
        _check_not_misspelled_options(extra)
        summary = launch_grid(args.grid, extra_args=extra, **overrides)
    except (ValueError, TypeError, FileNotFoundError, ImportError) as error:
        print(f"rlpyt launch: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Runs are stopped and the summary printed by then.
        return 130
    return 0 if summary.ok else 1


LAUNCH_OPTIONS = ("--affinity-code", "--runs-per-setting", "--exp-dir", "--backend",
                  "--ray-address")


def _check_not_misspelled_options(extra: list[str]) -> None:
    """Arguments for the runs pass through, but ``--exp_dir`` is surely a launch option."""
    for token in extra:
        option = token.split("=", 1)[0].replace("_", "-")
        if option in LAUNCH_OPTIONS and option != token.split("=", 1)[0]:
            raise ValueError(f"rlpyt launch: unrecognised option {token!r}; did you mean "
                             f"{option}? (arguments for the train script go after --)")


def main(argv: list[str] | None = None) -> int:
    """``python -m rlpyt.experiments.launch_grid GRID.py ...`` (same as ``rlpyt launch``)."""
    parser = argparse.ArgumentParser(prog="rlpyt")
    add_launch_subparser(parser.add_subparsers(dest="command", required=True))
    argv = sys.argv[1:] if argv is None else argv
    args, extra = parser.parse_known_args(["launch", *argv])
    return run_launch(args, extra)


if __name__ == "__main__":
    raise SystemExit(main())
