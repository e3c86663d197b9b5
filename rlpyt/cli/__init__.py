"""The ``rlpyt`` command: ``train``, ``plot`` and ``launch``."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    from rlpyt.cli.plot import add_plot_parser
    from rlpyt.cli.train import add_train_parser

    parser = argparse.ArgumentParser(
        prog="rlpyt", description="Modular deep reinforcement learning in PyTorch."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_train_parser(subparsers)
    add_plot_parser(subparsers)
    try:
        from rlpyt.experiments.launch_grid import add_launch_subparser
    except ImportError:  # pragma: no cover - launching is part of the core install
        pass
    else:
        add_launch_subparser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        parser.print_help()
        return 2
    return int(args.handler(args, extra) or 0)
