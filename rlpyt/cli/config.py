"""The config of a ``rlpyt train`` run: the preset's defaults, then a loaded config,
then the flags.

A config is the dict saved as ``params.json``'s ``config``, so that ``--config`` and
``--resume`` start from it again: ``algo_name``; ``env`` (the id and env keywords);
the keywords of ``algo``, ``agent``, ``sampler`` and ``runner``; the run's settings
(``seed``, ``sampler_type``, ``runner_type``, ``nproc``, ``workers``, ``cuda_idx``,
``torch_threads``, ``tensorboard``); and ``agent_class``, the agent the env's action
space picked.  The presets themselves are in ``rlpyt.cli.presets``; the ``--algo.KEY``
overrides are applied by ``rlpyt.cli.overrides``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os

from rlpyt.cli.component_keywords import override_keywords
from rlpyt.cli.components import ASYNC_SAMPLERS, agent_class
from rlpyt.cli.overrides import ConfigError, apply_overrides, parse_override_args
from rlpyt.cli.presets import PRESETS, Preset, import_path, preset_for
from rlpyt.utils.process import available_cpus, launched_by_torchrun

__all__ = ["build_config", "load_run_config", "preset_config", "resume_config"]


def build_config(args: argparse.Namespace, extra: list[str]) -> dict:
    """The run's full config: preset defaults, then a loaded config, then flags."""
    _check_cuda_idx(args.cuda_idx)
    config = _starting_config(args)
    _apply_run_flags(args, config)
    preset = preset_for(config["algo_name"], config["env"]["id"])
    _set_torch_threads(args, config, preset)
    _check_async(config, preset)
    config["agent_class"] = agent_class(config, preset)
    valid, defaults = override_keywords(config, preset)
    return apply_overrides(config, parse_override_args(extra), valid, defaults)


def preset_config(algo: str, env_id: str) -> dict:
    """The config of ``algo``'s preset for ``env_id``'s family, with the preset's
    settings for that env (``env_overrides``) applied."""
    preset = preset_for(algo, env_id)
    config = dict(
        algo_name=algo,
        env={"id": env_id, **copy.deepcopy(preset.env_kwargs)},
        algo=copy.deepcopy(preset.algo_kwargs),
        agent=copy.deepcopy(preset.agent_kwargs),
        sampler=copy.deepcopy(preset.sampler_kwargs),
        runner=copy.deepcopy(preset.runner_kwargs),
    )
    for part, values in preset.overrides_for(env_id).items():
        if part != "source":
            config[part].update(copy.deepcopy(values))
    return config


def load_run_config(path: str, flag: str = "config") -> dict:
    """The ``config`` of a run's ``params.json`` (``path``: the file or its run dir)."""
    if os.path.isdir(path):
        path = os.path.join(path, "params.json")
    if not os.path.isfile(path):
        raise ConfigError(f"{flag} {path!r}: no such file (give the params.json of an "
                          f"earlier run, or its run directory)")
    try:
        with open(path) as f:
            saved = json.load(f)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{flag} {path!r}: not a readable params.json ({e})") from None
    config = saved.get("config", saved) if isinstance(saved, dict) else None
    if not isinstance(config, dict) or config.get("algo_name") not in PRESETS:
        raise ConfigError(f"{flag} {path!r}: holds no rlpyt train config (algo_name one of "
                          f"{sorted(PRESETS)})")
    return config


def resume_config(args: argparse.Namespace, extra: list[str],
                  run_dir: str) -> tuple[dict, str, int]:
    """Config, log dir and run id of the run ``--resume`` continues; ``run_dir`` is the
    run directory it names (``rlpyt.cli.run_folder.resume_dir``)."""
    config = load_run_config(run_dir, "--resume")
    if extra or args.config or args.env or args.seed is not None:
        raise ConfigError("--resume continues a run with its saved config: only --n-steps "
                          "(to train longer) may be given with it")
    if args.n_steps:
        config["runner"]["n_steps"] = int(args.n_steps)
    with open(os.path.join(run_dir, "params.json")) as f:
        run_ID = json.load(f).get("run_ID", 0)
    if os.path.basename(run_dir) != f"run_{run_ID}":
        raise ConfigError(f"--resume {args.resume!r}: expected a directory named run_{run_ID} "
                          f"(its params.json says run_ID={run_ID})")
    return config, os.path.dirname(run_dir), run_ID


def _check_cuda_idx(cuda_idx: int | None) -> None:
    """Refuse ``--cuda-idx`` of a GPU this machine does not have."""
    if cuda_idx is None:
        return
    from rlpyt.runners.preflight import check_cuda_idx

    try:
        check_cuda_idx(cuda_idx)
    except ValueError as e:
        raise ConfigError(f"--cuda-idx {cuda_idx}: {e}") from None


def _starting_config(args: argparse.Namespace) -> dict:
    """The config the flags change: a loaded one (``--config``, whose env ``--env``
    replaces), else the preset of the env's family (MinAtar, Atari, MuJoCo or classic)."""
    if args.config:
        config = load_run_config(args.config, "--config")
        if args.env:
            config["env"] = {"id": args.env}
        return config
    config = preset_config(args.algo, args.env or PRESETS[args.algo].env)
    config["sampler_type"] = args.sampler_type
    return config


def _apply_run_flags(args: argparse.Namespace, config: dict) -> None:
    """The flags that set the run rather than a component's keyword, into ``config``."""
    if args.n_steps:
        config["runner"]["n_steps"] = int(args.n_steps)
    if args.seed is not None:
        config["seed"] = args.seed
    config.setdefault("seed", 0)  # a loaded config keeps its own seed
    if args.cuda_idx is not None:
        config["cuda_idx"] = args.cuda_idx
    if args.workers is not None:
        config["workers"] = args.workers
    _nproc_flag(args, config)
    if args.sampler_type != "serial":
        config["sampler_type"] = args.sampler_type
    _ray_flags(args, config)
    if args.runner != "sync":
        config["runner_type"] = args.runner
    if args.tensorboard:
        config["tensorboard"] = True  # kept by --resume, which reads the saved config


def _nproc_flag(args: argparse.Namespace, config: dict) -> None:
    """``--nproc N``: N SyncRl ranks (N >= 1, and not with ``--runner async``)."""
    if args.nproc == 1:
        return
    if args.nproc < 1:
        raise ConfigError(f"--nproc {args.nproc}: the number of ranks must be >= 1")
    config["nproc"] = args.nproc
    if args.runner == "async":
        raise ConfigError("--runner async trains with one optimizer process; it does "
                          "not combine with --nproc (SyncRl ranks)")


def _ray_flags(args: argparse.Namespace, config: dict) -> None:
    """``--actors`` and ``--ray-address`` become RaySampler keywords."""
    given = [flag for flag, value in (("--actors", args.actors),
                                      ("--ray-address", args.ray_address)) if value is not None]
    if given and config.get("sampler_type") != "ray":
        raise ConfigError(f"{' and '.join(given)}: only for the Ray sampler; add --sampler-type ray")
    if args.actors is not None:
        config["sampler"]["n_actors"] = args.actors
    if args.ray_address is not None:
        config["sampler"]["ray_address"] = args.ray_address


def _set_torch_threads(args: argparse.Namespace, config: dict, preset: Preset) -> None:
    """``--torch-threads``, else the preset's; a loaded config keeps its own."""
    if args.torch_threads is not None:
        config["torch_threads"] = args.torch_threads
    elif not args.config or "torch_threads" not in config:
        config["torch_threads"] = _default_torch_threads(preset, config)


def _default_torch_threads(preset: Preset, config: dict) -> int:
    """The preset's torch threads for the main process (``Preset.torch_threads``)."""
    if preset.torch_threads is not None:
        return preset.torch_threads
    if (config.get("runner_type", "sync") != "sync" or config.get("nproc", 1) > 1
            or launched_by_torchrun()):
        return 1
    return len(available_cpus())


def _check_async(config: dict, preset: Preset) -> None:
    """Refuse ``--runner async`` with a sampler type that has no asynchronous twin, or
    with an algorithm that cannot train asynchronously (naming those that can)."""
    if config.get("runner_type") != "async":
        return
    from rlpyt.algos.base import RlAlgorithm

    sampler_type = config.get("sampler_type", "serial")
    if sampler_type not in ASYNC_SAMPLERS:
        raise ConfigError(f"--sampler-type {sampler_type} has no asynchronous twin; with "
                          f"--runner async use one of {sorted(ASYNC_SAMPLERS)}")
    AlgoCls = import_path(preset.algo)
    if AlgoCls.async_initialize is RlAlgorithm.async_initialize:
        usable = sorted(name for name, p in PRESETS.items()
                        if import_path(p.algo).async_initialize
                        is not RlAlgorithm.async_initialize)
        raise ConfigError(f"--algo {config['algo_name']} ({AlgoCls.__name__}) cannot run "
                          f"with --runner async; algorithms that can: {usable}")
