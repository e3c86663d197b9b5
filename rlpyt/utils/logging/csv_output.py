"""A CSV progress file whose columns may grow during a run.

Diagnostics sometimes appear only after training starts (e.g. evaluation or
replay statistics).  Appending such a row under the old header would shift every
column; instead the file is rewritten once with the widened header, old rows
getting empty cells in the new columns.  Rows are otherwise appended, so the
cost per row stays constant.
"""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Mapping
from typing import Any

from rlpyt.utils.logging.run_dir import StorageWriteError

__all__ = ["CsvOutput"]


class CsvOutput:
    """Append rows of ``{column: value}`` to a CSV file, widening the header as needed.

    Args:
        path: file to write.
        append: continue an existing file (its header gives the starting columns);
            ``False`` starts a new file, replacing any old one.
    """

    def __init__(self, path: str, append: bool = False):
        self.path = path
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        self.fieldnames: list[str] = []
        if append and os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path, newline="") as f:
                self.fieldnames = next(csv.reader(f), [])
        else:
            open(path, "w").close()

    def write_row(self, row: Mapping[str, Any]) -> None:
        """Append ``row``; a write that fails (``StorageWriteError``) leaves the file as
        it was before, with no half-written row."""
        try:
            new_keys = [k for k in row if k not in self.fieldnames]
            if new_keys:
                self._widen(self.fieldnames + new_keys)
            size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
            try:
                with open(self.path, "a", newline="") as f:
                    csv.DictWriter(f, fieldnames=self.fieldnames, restval="").writerow(row)
            except OSError:
                with contextlib.suppress(OSError), open(self.path, "r+b") as f:
                    f.truncate(size)
                raise
        except OSError as error:
            raise StorageWriteError("the log row of", self.path, error) from error

    def n_rows(self) -> int:
        """Data rows in the file (the header not counted)."""
        if not os.path.exists(self.path):
            return 0
        with open(self.path, newline="") as f:
            return max(sum(1 for _ in csv.reader(f)) - 1, 0)

    def truncate(self, n_rows: int) -> None:
        """Keep the header and the first ``n_rows`` rows (atomically): rows a killed run
        wrote after its last checkpoint are dropped before the resumed run rewrites them."""
        if not os.path.exists(self.path) or os.path.getsize(self.path) == 0:
            return
        with open(self.path, newline="") as f:
            rows = list(csv.reader(f))
        if len(rows) - 1 <= n_rows:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w", newline="") as f:
            csv.writer(f).writerows(rows[: n_rows + 1])
        os.replace(tmp, self.path)

    def _widen(self, fieldnames: list[str]) -> None:
        """Rewrite the file under ``fieldnames`` (atomically, via a temporary file)."""
        old_rows: list[dict[str, str]] = []
        if self.fieldnames:
            with open(self.path, newline="") as f:
                old_rows = list(csv.DictReader(f))
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=fieldnames, restval="")
                writer.writeheader()
                writer.writerows(old_rows)
        except OSError:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        os.replace(tmp, self.path)
        self.fieldnames = fieldnames
