"""``rlpyt train``: build a run from a preset plus overrides, train it, report."""

from __future__ import annotations

import copy
import inspect
import json
import math
import os

from rlpyt.cli.overrides import ConfigError, apply_overrides, parse_override_args
from rlpyt.cli.presets import PRESETS, import_path, preset_for

__all__ = ["add_train_parser", "build_config", "run_train", "train_from_config"]

SAMPLERS = {
    "serial": "rlpyt.samplers.serial.sampler:SerialSampler",
    "cpu": "rlpyt.samplers.parallel.cpu.sampler:CpuSampler",
    "gpu": "rlpyt.samplers.parallel.gpu.sampler:GpuSampler",
    "alternating": "rlpyt.samplers.parallel.gpu.alternating_sampler:AlternatingSampler",
    "alternating-no-overlap":
        "rlpyt.samplers.parallel.gpu.alternating_sampler:NoOverlapAlternatingSampler",
}
RUNNER = "rlpyt.runners.minibatch_rl:MinibatchRlEval"


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
    p.add_argument("--n-steps", type=float, default=None, help="env steps to train for")
    p.add_argument("--seed", type=int, default=None,
                   help="run seed (default: the --config run's seed, else 0)")
    p.add_argument("--log-dir", default=None, help="run directory root (default runs/<algo>_<env>)")
    p.add_argument("--run-id", type=int, default=0, help="run index within the log dir")
    p.add_argument("--sampler-type", default="serial", choices=sorted(SAMPLERS))
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes of the parallel samplers (default: all CPUs)")
    p.add_argument("--cuda-idx", type=int, default=None, help="GPU index for training")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch threads of the main process (default 1: fastest for small "
                        "models, and no oversubscription with parallel workers)")
    p.add_argument("--config", default=None,
                   help="params.json of an earlier run: start from its full config")
    p.add_argument("--snapshot-mode", default="last",
                   choices=["all", "last", "gap", "last+gap", "none"])
    p.set_defaults(handler=run_train)
    return p


def _keywords(cls) -> set[str] | None:
    """Keyword names accepted by ``cls.__init__`` across its MRO (None: accepts anything)."""
    names, open_ended = set(), True
    for klass in inspect.getmro(cls):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        explicit = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        names.update(p.name for p in explicit if p.name != "self")
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            open_ended = False
            break
    return None if open_ended and not names else names


def _action_kind(env_id: str, env_kwargs: dict) -> str:
    from rlpyt.envs.gym import make
    from rlpyt.spaces.int_box import IntBox

    env = make(env_id, **env_kwargs)
    try:
        space = getattr(env.action_space, "space", env.action_space)
        return "discrete" if isinstance(space, IntBox) else "continuous"
    finally:
        env.close()


def build_config(args, extra: list[str]) -> dict:
    """The run's full config: preset defaults, then a loaded config, then flags."""
    if args.config:
        with open(args.config) as f:
            saved = json.load(f)
        config = saved.get("config", saved)
    else:
        preset = preset_for(args.algo, args.env)  # MinAtar ids: their own preset
        config = dict(
            algo_name=args.algo,
            env={"id": preset.env},
            algo=copy.deepcopy(preset.algo_kwargs),
            agent=copy.deepcopy(preset.agent_kwargs),
            sampler=copy.deepcopy(preset.sampler_kwargs),
            runner=copy.deepcopy(preset.runner_kwargs),
            sampler_type=args.sampler_type,
        )
    if args.env:
        config["env"] = {"id": args.env}
    if args.n_steps:
        config["runner"]["n_steps"] = int(args.n_steps)
    if args.seed is not None:
        config["seed"] = args.seed
    config.setdefault("seed", 0)  # a loaded config keeps its own seed
    if args.cuda_idx is not None:
        config["cuda_idx"] = args.cuda_idx
    if args.workers is not None:
        config["workers"] = args.workers
    config["torch_threads"] = args.torch_threads
    if args.sampler_type != "serial":
        config["sampler_type"] = args.sampler_type
    preset = preset_for(config["algo_name"], config["env"]["id"])
    env = dict(config["env"])
    kind = _action_kind(env.pop("id"), env)
    config["agent_class"] = preset.agents[kind]
    valid = dict(
        algo=_keywords(import_path(preset.algo)),
        agent=_keywords(import_path(config["agent_class"])),
        sampler=_sampler_keywords(config["sampler_type"]),
        runner={"n_steps", "log_interval_steps", "log_traj_window"},
        env=None,
    )
    return apply_overrides(config, parse_override_args(extra), valid)


def _sampler_keywords(sampler_type: str) -> set[str]:
    names = _keywords(import_path(SAMPLERS[sampler_type])) or set()
    return names - {"self", "EnvCls", "env_kwargs"}


def _affinity(config: dict) -> dict:
    cuda_idx = config.get("cuda_idx")
    threads = config.get("torch_threads", 1)
    if config.get("sampler_type", "serial") == "serial":
        return dict(cuda_idx=cuda_idx, master_torch_threads=threads)
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        cpus = list(range(os.cpu_count() or 1))
    n = config.get("workers") or len(cpus)
    if n > len(cpus):  # More workers than CPUs: run them unpinned.
        return dict(cuda_idx=cuda_idx, n_workers=n, master_torch_threads=threads)
    return dict(cuda_idx=cuda_idx, workers_cpus=cpus[:n], master_cpus=cpus,
                master_torch_threads=threads)


def train_from_config(config: dict, log_dir: str, run_ID: int = 0,
                      snapshot_mode: str = "last") -> dict:
    """Build every component from ``config`` and train under a logger context."""
    from rlpyt.envs.gym import make
    from rlpyt.utils.logging.context import logger_context

    preset = PRESETS[config["algo_name"]]
    env_kwargs = dict(config["env"])
    sampler_kwargs = dict(config["sampler"])
    SamplerCls = import_path(SAMPLERS[config.get("sampler_type", "serial")])
    sampler = SamplerCls(EnvCls=make, env_kwargs=env_kwargs, **sampler_kwargs)
    agent = import_path(config["agent_class"])(**config["agent"])
    algo = import_path(preset.algo)(**config["algo"])
    runner = import_path(RUNNER)(algo=algo, agent=agent, sampler=sampler,
                                 seed=config.get("seed"), affinity=_affinity(config),
                                 **config["runner"])
    name = f"{config['algo_name']}_{env_kwargs['id']}"
    with logger_context(log_dir, run_ID, name, log_params=dict(config=config),
                        snapshot_mode=snapshot_mode, override_prefix=True):
        return runner.train()


def run_train(args, extra: list[str]) -> int:
    try:
        config = build_config(args, extra)
    except ConfigError as e:
        print(f"rlpyt train: {e}")
        return 2
    env_id = config["env"]["id"]
    log_dir = args.log_dir or os.path.join("runs", f"{config['algo_name']}_{env_id}")
    summary = train_from_config(config, log_dir, args.run_id, args.snapshot_mode)
    final = summary.get("final_eval_return", float("nan"))
    run_dir = os.path.abspath(os.path.join(log_dir, f"run_{args.run_id}"))
    if not math.isnan(final):
        print(f"Final evaluation return: {final:.1f}")
    print(f"Run directory: {run_dir}")
    return 0
