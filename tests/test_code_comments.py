"""Comments and docstrings under ``rlpyt/`` say *why*, in the present tense: no calendar
dates and no measurement logs (timings, learning results, "measured ..."), which belong
in the docs' notes (docs/notes/code_figures.md and the note of each topic).

Every ``.py`` file is read with ``tokenize``: its ``COMMENT`` tokens (consecutive comment
lines as one text, so a phrase broken over two lines is still found) and its docstrings
(string tokens that are a statement of their own, as ``ast`` tells).  Whitespace is
collapsed before matching; a failure names the file and line of each match."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlpyt"

_NUM = r"\d+(?:\.\d+)?"
_UNIT = r"(?:ns|us|µs|ms|s)"
_PAST = r"(?:held|reached|solved|passed|failed|fell back|learned)"

# What each pattern catches, and the pattern.  Each is narrow on purpose: a parameter's
# explanation ("the test passes when it holds in 1 of 2 seeds", "sleeps from 50 us to
# 2 ms", "the measured ratio") is not a measurement log.
FORBIDDEN = {
    "a calendar date": r"\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b",
    "a timing against another": rf"\b{_NUM} ?{_UNIT} against {_NUM}",
    "a score against another at a budget": rf"-?{_NUM} against -?{_NUM} at {_NUM}[kM]? "
                                           rf"(?:frames|steps)\b",
    "a result over seeds": rf"\b{_PAST}\b[^.;]{{0,40}}?\bin \d+ of \d+\b",
    "a count of seeds with a result": rf"\b\d+ of \d+ (?:seeds )?{_PAST}\b",
    "a measurement": r"\bmeasured (?:on|at|about|slower|faster|no faster|no slower|\d)"
                     r"|\bmeasured:",
    "a speed ratio": rf"\b{_NUM}(?:x|%) (?:faster|slower)\b"
                     rf"|\b{_NUM}x the (?:frames|steps|speed|throughput)\b"
                     rf"|\bgained (?:only )?{_NUM}x\b",
    "a time taken": rf"\b(?:takes|took) about {_NUM} ?{_UNIT}\b",
    "a team rule": r"\b(?:the|our) team\b",
    "the history of the code": r"\bused to be\b|\b(?:older|earlier|previous) versions?\b"
                               r"|\bwas changed\b|\bsince (?:19|20)\d\d\b",
}
_PATTERNS = {what: re.compile(pattern, re.IGNORECASE) for what, pattern in FORBIDDEN.items()}


def _docstring_lines(source: str) -> set[int]:
    """First lines of the string literals that are statements of their own (docstrings of
    modules, classes and functions, and attribute docstrings)."""
    return {node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def texts(source: str) -> list[list[tuple[int, str]]]:
    """The comment blocks and docstrings of ``source``, each as ``[(line, text), ...]``."""
    docstrings = _docstring_lines(source)
    found, block, last_line = [], [], None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            line = tok.start[0]
            if block and line != last_line + 1:
                found.append(block)
                block = []
            block.append((line, tok.string.lstrip("#")))
            last_line = line
        elif tok.type == tokenize.STRING and tok.start[0] in docstrings:
            found.append([(tok.start[0] + i, text)
                          for i, text in enumerate(tok.string.splitlines())])
    if block:
        found.append(block)
    return found


def problems_in(source: str, name: str) -> list[str]:
    """``name:line: what: 'match'`` for every forbidden phrase in ``source``'s comments
    and docstrings."""
    problems = []
    for pieces in texts(source):
        joined, starts = "", []
        for line, text in pieces:
            starts.append((len(joined), line))
            joined += " ".join(text.split()) + " "
        for what, pattern in _PATTERNS.items():
            for match in pattern.finditer(joined):
                line = max((s for s in starts if s[0] <= match.start()), default=starts[0])[1]
                problems.append(f"{name}:{line}: {what}: {match.group(0)!r}")
    return problems


def test_comments_and_docstrings_hold_no_dates_or_measurements():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        problems += problems_in(path.read_text(encoding="utf-8"),
                                str(path.relative_to(ROOT)))
    assert not problems, (
        "comments and docstrings say why, in the present tense; move these figures, dates "
        "and history to docs/notes/ (docs/notes/code_figures.md where no note fits):\n"
        + "\n".join(problems))


def test_the_scan_catches_each_kind_and_spares_explanations():
    flagged = '''
"""Module.  Dates from 2026-11-25 on."""
x = 1  # measured slower
# forward 90 us against 22 us
# budget end held 475 in 4 of
# 5 seeds; at 5e-4 5 of 5 held 500
def f():
    """-16.0 against -7.6 at 10M frames; about 3x
    faster; takes about 0.4 s; the team allows it; as in older versions."""
'''
    found = problems_in(flagged, "m.py")
    kinds = {p.split(": ")[1] for p in found}
    assert kinds == set(FORBIDDEN), found
    assert "m.py:2: a calendar date: '2026-11-25'" in found
    assert "m.py:5: a result over seeds: 'held 475 in 4 of 5'" in found
    assert any(p.startswith("m.py:8: a score against another") for p in found)

    spared = '''
"""Sleeps growing from 50 us to 2 ms.  Lets the measured ratio wander.  The test passes
when it holds in 1 of 2 seeds; 2 of 3 seeds must reach 475."""
y = 2  # a lower bound used to normalise; "abc".split() is not a comment
s = "held 475 in 3 of 5 seeds"  # a string value, not a docstring
'''
    assert problems_in(spared, "m.py") == []
