"""Final returns over seeds: does a solved task stay solved to the end of the run?

Trains one algorithm on CartPole-v1 with ``MinibatchRlEval`` and a ``SerialSampler`` for
the whole budget (no early stop), one process per seed (``--jobs`` at a time), and
prints every seed's evaluation history, the mean of its last ``--last`` evaluations and
how many seeds hold ``--threshold`` there.  ``--algo-kwargs`` (JSON) overrides the
class defaults, so the same command measures a library default and a fix:

    python bench/results/final_returns.py --algo impala --seeds 0 1 2 3 4
    python bench/results/final_returns.py --algo impala --algo-kwargs '{"learning_rate": 3e-4}'
    python bench/results/final_returns.py --algo r2d1 --preset --seeds 0 1 2
    python bench/results/final_returns.py --algo r2d1 --preset --mask-velocity --threshold 400

``--preset`` starts from the ``rlpyt train`` preset's algorithm, agent and sampler
settings instead of the class defaults (``--algo-kwargs`` and ``--agent-kwargs`` then
override the preset).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rlpyt.cli.presets import PRESETS, import_path  # noqa: E402

EVAL = dict(eval_n_envs=5, eval_max_trajectories=5)


def masked_env_maker():
    """``make_masked_cartpole`` of ``examples/r2d1_masked_cartpole.py``: CartPole-v1 with
    the velocities zeroed, the task of the recurrent learning tests."""
    spec = importlib.util.spec_from_file_location(
        "r2d1_masked_cartpole", ROOT / "examples" / "r2d1_masked_cartpole.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_masked_cartpole


def train_seed(job: dict) -> dict:
    import torch

    from rlpyt.envs.gym import make
    from rlpyt.runners.async_rl import AsyncRlEval
    from rlpyt.runners.minibatch_rl import MinibatchRlEval
    from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
    from rlpyt.samplers.serial.sampler import SerialSampler
    from rlpyt.utils.logging.context import logger_context

    torch.set_num_threads(1)
    preset = PRESETS[job["algo"]]
    AlgoCls = import_path(preset.algo)
    AgentCls = import_path(preset.agents["discrete"])
    algo_kwargs = dict(preset.algo_kwargs) if job["preset"] else {}
    algo_kwargs.update(job["algo_kwargs"])
    agent_kwargs = dict(preset.agent_kwargs) if job["preset"] else {}
    agent_kwargs.update(job["agent_kwargs"])
    sampler_kwargs = dict(preset.sampler_kwargs) if job["preset"] else {}
    sampler_kwargs.update(batch_T=job["batch_T"] or sampler_kwargs.get("batch_T", 20),
                          batch_B=job["batch_B"] or sampler_kwargs.get("batch_B", 8),
                          max_decorrelation_steps=0, **EVAL)
    asynchronous = job["runner"] == "async"
    SamplerCls = AsyncSerialSampler if asynchronous else SerialSampler
    RunnerCls = AsyncRlEval if asynchronous else MinibatchRlEval
    if job["mask_velocity"]:
        EnvCls, env_kwargs = masked_env_maker(), {}
    else:
        EnvCls, env_kwargs = make, dict(id=job["env"])
    sampler = SamplerCls(EnvCls=EnvCls, env_kwargs=env_kwargs, **sampler_kwargs)
    runner = RunnerCls(algo=AlgoCls(**algo_kwargs), agent=AgentCls(**agent_kwargs),
                             sampler=sampler, n_steps=job["n_steps"], seed=job["seed"],
                             log_interval_steps=job["log_interval"])
    start = time.perf_counter() if asynchronous else time.process_time()
    with contextlib.ExitStack() as stack:
        # The run directory is <log_dir>/run_<seed>.
        log_dir = job["log_dir"] or stack.enter_context(tempfile.TemporaryDirectory())
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        stack.enter_context(logger_context(str(log_dir), job["seed"], "final",
                                           override_prefix=True))
        summary = runner.train()
    end = time.perf_counter() if asynchronous else time.process_time()
    return dict(seed=job["seed"], history=summary["eval_history"], cpu_s=end - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", default="impala", choices=sorted(PRESETS))
    p.add_argument("--preset", action="store_true",
                   help="start from the preset's settings instead of the class defaults")
    p.add_argument("--algo-kwargs", default="{}", help="JSON overrides of the algorithm")
    p.add_argument("--agent-kwargs", default="{}", help="JSON overrides of the agent")
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--mask-velocity", action="store_true",
                   help="CartPole-v1 with its velocities zeroed (the recurrent tests' task; "
                        "--env is then ignored)")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--n-steps", type=int, default=300_000)
    p.add_argument("--log-interval", type=int, default=20_000)
    p.add_argument("--batch-T", type=int, default=None, help="default: preset's, else 20")
    p.add_argument("--batch-B", type=int, default=None, help="default: preset's, else 8")
    p.add_argument("--threshold", type=float, default=475.0)
    p.add_argument("--last", type=int, default=2, help="evaluations averaged at the end")
    p.add_argument("--jobs", type=int, default=2,
                   help="seeds trained at once (--runner async: one at a time)")
    p.add_argument("--runner", choices=("sync", "async"), default="sync",
                   help="sync: MinibatchRlEval + SerialSampler; async: AsyncRlEval + "
                        "AsyncSerialSampler (sampler and memory copier in processes of "
                        "their own, so the seeds run one after another here)")
    p.add_argument("--log-dir", type=Path, default=None,
                   help="keep each seed's progress.csv under LOG_DIR/run_<seed> (default: "
                        "a temporary directory)")
    args = p.parse_args()
    jobs = [dict(algo=args.algo, preset=args.preset, algo_kwargs=json.loads(args.algo_kwargs),
                 agent_kwargs=json.loads(args.agent_kwargs),
                 env=args.env, mask_velocity=args.mask_velocity, seed=seed, n_steps=args.n_steps, log_interval=args.log_interval,
                 batch_T=args.batch_T, batch_B=args.batch_B,
                 log_dir=args.log_dir, runner=args.runner) for seed in args.seeds]
    if args.runner == "async":  # A pool's daemonic workers may not start processes.
        results = [train_seed(job) for job in jobs]
    else:
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            results = pool.map(train_seed, jobs)
    held = 0
    print(f"{args.algo} ({args.runner}) {'preset' if args.preset else 'defaults'} + "
          f"{args.algo_kwargs} "
          f"(agent + {args.agent_kwargs}) on "
          f"{'velocity-masked CartPole-v1' if args.mask_velocity else args.env}, "
          f"{args.n_steps} steps, eval every {args.log_interval}")
    for r in results:
        returns = [ret for _, ret in r["history"]]
        final = sum(returns[-args.last:]) / len(returns[-args.last:])
        first = next((s for s, ret in r["history"] if ret >= args.threshold), None)
        held += final >= args.threshold
        print(f"seed {r['seed']}: first >= {args.threshold:g} at {first}; mean of last "
              f"{args.last} = {final:.1f}; min after first = "
              f"{min((ret for s, ret in r['history'] if first and s >= first), default=None)}; "
              f"{r['cpu_s']:.0f} {'wall' if args.runner == 'async' else 'CPU'} s; history {[round(x) for x in returns]}", flush=True)
    print(f"final mean of last {args.last} >= {args.threshold:g} in {held} of {len(results)} seeds")


if __name__ == "__main__":
    main()
