"""The flags of ``rlpyt train``: the run's own settings, each with its type and help.

Component keywords (``--algo.KEY VALUE`` and the like) are not flags here: argparse
leaves them over, and ``rlpyt.cli.overrides`` reads them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rlpyt.cli.components import SAMPLERS
from rlpyt.cli.presets import PRESETS

__all__ = ["train_parser"]


def _positive(kind: type) -> Callable[[str], float]:
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
    """argparse type: an integer that is >= 0 (``--run-id``, ``--cuda-idx``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be >= 0")
    return value


def train_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``train`` command's parser with every flag, added to ``subparsers``; the
    command's handler is set by ``rlpyt.cli.train.add_train_parser``."""
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
                        "(replay-based algorithms, impala and appo; see docs/async.md)")
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
    return p
