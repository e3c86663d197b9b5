"""``rlpyt train``: build a run from a preset plus overrides, train it, report."""

from __future__ import annotations

import copy
import inspect
import json
import math
import os

from rlpyt.cli.overrides import ConfigError, apply_overrides, parse_override_args
from rlpyt.cli.presets import PRESETS, import_path

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
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")  # set by torchrun for every process
SYNC_RUNNER = "rlpyt.runners.sync_rl:SyncRlEval"  # --nproc N > 1, or under torchrun


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
    p.add_argument("--nproc", type=int, default=1,
                   help="data-parallel ranks on this machine (SyncRl; default 1: no "
                        "distribution); under torchrun the job's ranks are used instead")
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
        preset = PRESETS[args.algo]
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
    if args.nproc != 1:
        if args.nproc < 1:
            raise ConfigError(f"--nproc {args.nproc}: the number of ranks must be >= 1")
        config["nproc"] = args.nproc
    if args.sampler_type != "serial":
        config["sampler_type"] = args.sampler_type
    preset = PRESETS[config["algo_name"]]
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
    distributed = config.get("nproc", 1) > 1 or launched_by_torchrun()
    runner = import_path(SYNC_RUNNER if distributed else RUNNER)(
        algo=algo, agent=agent, sampler=sampler, seed=config.get("seed"),
        affinity=_rank_affinities(config) if distributed else _affinity(config),
        **config["runner"])
    if launched_by_torchrun() and int(os.environ["RANK"]) != 0:
        return runner.train()  # rank 0 alone writes the run directory
    name = f"{config['algo_name']}_{env_kwargs['id']}"
    with logger_context(log_dir, run_ID, name, log_params=dict(config=config),
                        snapshot_mode=snapshot_mode, override_prefix=True):
        return runner.train()


def launched_by_torchrun() -> bool:
    """This process is one rank of a ``torchrun`` job (``rlpyt.runners.sync_rl``'s test,
    repeated here so that the CLI imports no torch before it trains)."""
    return all(key in os.environ for key in TORCHRUN_ENV)


def _rank_affinities(config: dict) -> list[dict]:
    """One affinity per rank of this machine: ``--nproc`` ranks, or under torchrun its
    ``LOCAL_WORLD_SIZE``.  With ``--cuda-idx K`` local rank ``i`` trains on GPU ``K + i``
    (NCCL); otherwise on CPU (gloo), the machine's CPUs split evenly among the ranks."""
    n = int(os.environ.get("LOCAL_WORLD_SIZE", 0)) if launched_by_torchrun() else 0
    n = n or config.get("nproc", 1)
    cpus = _cpus()
    share = max(len(cpus) // n, 1)
    affinities = []
    for i in range(n):
        rank_config = dict(config)
        if config.get("cuda_idx") is not None:
            rank_config["cuda_idx"] = config["cuda_idx"] + i
        if config.get("workers") is None and len(cpus) >= n:
            rank_config["workers"] = share
        affinity = _affinity(rank_config)
        if "workers_cpus" in affinity and len(cpus) >= n:  # each rank on its own CPUs
            own = cpus[i * share:(i + 1) * share]
            affinity.update(workers_cpus=own[:len(affinity["workers_cpus"])], master_cpus=own)
        affinities.append(affinity)
    return affinities


def _cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return list(range(os.cpu_count() or 1))


def run_train(args, extra: list[str]) -> int:
    try:
        config = build_config(args, extra)
    except ConfigError as e:
        print(f"rlpyt train: {e}")
        return 2
    env_id = config["env"]["id"]
    log_dir = args.log_dir or os.path.join("runs", f"{config['algo_name']}_{env_id}")
    summary = train_from_config(config, log_dir, args.run_id, args.snapshot_mode)
    if launched_by_torchrun() and int(os.environ["RANK"]) != 0:
        return 0  # rank 0 reports
    final = summary.get("final_eval_return", float("nan"))
    run_dir = os.path.abspath(os.path.join(log_dir, f"run_{args.run_id}"))
    if not math.isnan(final):
        print(f"Final evaluation return: {final:.1f}")
    print(f"Run directory: {run_dir}")
    return 0
