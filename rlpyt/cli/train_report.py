"""What ``rlpyt train`` prints when it ends: the result, how to resume after an
interrupt, or the one-line error of a bad config."""

from __future__ import annotations

import math
import os
import shlex
import sys

from rlpyt.cli.overrides import ConfigError

__all__ = ["report_config_error", "report_interrupt", "report_result"]


def report_config_error(e: ConfigError) -> int:
    """Print the bad-input line on stderr; the exit code of bad input (2)."""
    print(f"rlpyt train: error: {e}", file=sys.stderr)
    return 2


def report_interrupt(run_dir: str) -> None:
    """After Ctrl-C: the checkpoint a resume continues from and the command to type."""
    from rlpyt.utils.logging.run_dir import latest_checkpoint

    latest = latest_checkpoint(run_dir) if os.path.isdir(run_dir) else None
    if latest is None:
        print("rlpyt train: interrupted before the first checkpoint; nothing to resume",
              file=sys.stderr)
        return
    print(f"rlpyt train: interrupted; latest checkpoint {latest}\n"
          f"Resume with: rlpyt train --resume {shlex.quote(run_dir)}", file=sys.stderr)


def report_result(summary: dict, run_dir: str) -> None:
    """After training: the final evaluation return (when the run evaluated) and the
    absolute path of the run directory."""
    final = summary.get("final_eval_return", float("nan"))
    if not math.isnan(final):
        print(f"Final evaluation return: {final:.1f}")
    print(f"Run directory: {os.path.abspath(run_dir)}")
