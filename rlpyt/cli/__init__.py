"""The ``rlpyt`` command: ``train``, ``evaluate``, ``plot``, ``compare`` and ``launch``.

Errors print one line on stderr (``rlpyt train: error: ...``), the cause first: for a
failure in another process (a sampler worker, a SyncRl rank, the async sampler), that
process's exception type and message, then where it happened.  The exit code is 2 (bad
input, found before anything ran) or 1 (a failure during the run, a run file that
could not be written among them: ``StorageWriteError`` names it and its cause).  The
full traceback goes to the run's ``debug.log``; ``--debug`` (or the environment
variable ``RLPYT_DEBUG=1``) shows it on stderr instead.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from rlpyt.utils.logging.run_dir import StorageWriteError

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (argparse prints the whole usage block first)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from rlpyt.cli.compare import add_compare_parser
    from rlpyt.cli.evaluate import add_evaluate_parser
    from rlpyt.cli.plot import add_plot_parser
    from rlpyt.cli.train import add_train_parser
    from rlpyt.cli.tune import add_tune_parser

    parser = _Parser(
        prog="rlpyt", description="Modular deep reinforcement learning in PyTorch."
    )
    parser.add_argument("--debug", action="store_true",
                        help="show full tracebacks of errors (also: RLPYT_DEBUG=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_train_parser(subparsers)
    add_evaluate_parser(subparsers)
    add_plot_parser(subparsers)
    add_compare_parser(subparsers)
    add_tune_parser(subparsers)
    try:
        from rlpyt.experiments.launch_grid import add_launch_subparser
    except ImportError:  # pragma: no cover - launching is part of the core install
        pass
    else:
        add_launch_subparser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``rlpyt`` command; ``argv`` None: this process's arguments (the program
    itself, which then ends at once after the command: see
    ``rlpyt.utils.supervisor.exit_now``)."""
    code = _main(argv)
    if argv is None:
        from rlpyt.utils.supervisor import exit_now

        exit_now(code)
    return code


def _main(argv: list[str] | None) -> int:
    from rlpyt.utils.supervisor import interrupt_on_stop_signals

    argv = sys.argv[1:] if argv is None else argv
    args = None
    try:
        # From the start (building the parser imports the subcommands): SIGTERM stops
        # a run as Ctrl-C does, and either ends the command with one line, whenever.
        with interrupt_on_stop_signals():
            parser = build_parser()
            try:
                args, extra = parser.parse_known_args(argv)
            except SystemExit as e:  # usage errors (already printed, one line) and --help
                return int(e.code or 0)
            if args.command is None:
                parser.print_help()
                return 2
            return int(args.handler(args, extra) or 0)
    except KeyboardInterrupt as e:
        if args is not None and _debug(args):
            raise
        print(f"rlpyt {_command(args, argv)}: interrupted", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)  # 130 (SIGINT) or 143 (SIGTERM)
    except Exception as e:
        if args is None or _debug(args):
            raise
        print(f"rlpyt {args.command}: error: {_one_line(e)} (--debug shows the traceback)",
              file=sys.stderr)
        bad_input = isinstance(e, (ValueError, TypeError, LookupError, OSError))
        during_run = isinstance(e, (FloatingPointError, StorageWriteError))
        return 2 if bad_input and not during_run else 1


def _debug(args) -> bool:
    return args.debug or os.environ.get("RLPYT_DEBUG", "") not in ("", "0")


def _command(args, argv: list[str]) -> str:
    """The subcommand's name, also before the arguments were parsed."""
    if args is not None and args.command:
        return args.command
    return next((word for word in argv if not word.startswith("-")), "").strip() or "command"


def _one_line(e: BaseException) -> str:
    """The error in one line, its cause first (see the module doc)."""
    text = str(e).strip() or type(e).__name__
    if isinstance(e, KeyError) and len(e.args) == 1:
        text = str(e.args[0])
    cause, where = _innermost_cause(text)
    if cause is not None:
        text = f"{cause} (in {where})" if where else cause
    elif not isinstance(e, (ValueError, TypeError, LookupError, OSError)):  # bad input: plain
        text = f"{type(e).__name__}: {text}"
    return " ".join(text.split())


_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("The above exception was the direct cause of the following exception:",
            "During handling of the above exception, another exception occurred:")


def _innermost_cause(text: str) -> tuple[str | None, str]:
    """``(the exception line of the innermost traceback embedded in text, where it
    happened)``: an error from another process carries that process's traceback in its
    message, and its last exception is the cause (followed down when it carries a
    traceback itself; of a chain of exceptions, the one raised last)."""
    where, cause = [], None
    while _TRACEBACK in text:
        head, tail = text.split(_TRACEBACK, 1)
        head = head.strip().rstrip(":").strip()
        if head:
            place = head.splitlines()[0].rstrip(":").strip()
            where.append(place[:-len(" failed")] if place.endswith(" failed") else place)
        lines = tail.splitlines()[1:]
        start = next((i for i, line in enumerate(lines) if line and not line[0].isspace()),
                     None)
        if start is None:
            break
        rest = lines[start:]
        marker = next((i for i, line in enumerate(rest) if line.strip() in _CHAINED), None)
        if marker is not None:  # chained: the exception raised last comes after the marker
            text = "\n".join(rest[marker + 1:])
            continue
        text = cause = "\n".join(rest).strip()
    if cause is None:
        return None, ""
    lines = [line for line in cause.splitlines() if not _ALSO_STOPPED.match(line)]
    cause = _QUALIFIED.sub(r"\1", "\n".join(lines))  # rlpyt.runners.base.X: -> X:
    return cause, "; ".join(where)


_ALSO_STOPPED = re.compile(r"^\(rank \d+ also stopped: .*\)$")  # the SyncRl report's tail
_QUALIFIED = re.compile(r"^(?:[A-Za-z_][\w]*\.)+([A-Za-z_]\w*:)")
