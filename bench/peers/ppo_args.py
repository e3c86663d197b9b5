"""The command line both peer PPO loops share (``cleanrl_style_ppo.py``,
``torchrl_ppo.py``): the pong-ppo row's batch shapes, epochs and thread counts."""

from __future__ import annotations

import argparse

import torch


def parse_ppo_args() -> argparse.Namespace:
    """Parse ``--B --T --threads --iterations --epochs --minibatches --torch-threads``,
    set torch's thread count from ``--torch-threads`` and seed torch with 0."""
    p = argparse.ArgumentParser()
    p.add_argument("--B", type=int, default=8)
    p.add_argument("--T", type=int, default=128)
    p.add_argument("--threads", type=int, default=2, help="EnvPool's C++ threads")
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--torch-threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(0)
    return args
