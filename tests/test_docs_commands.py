"""Every command in README.md and docs/*.md runs as written (issue 30).

The ```bash and ```python blocks are extracted from the pages and run unchanged,
shrunk only by the environment: ``RLPYT_MAX_STEPS`` caps every runner's ``n_steps``
(see ``rlpyt.runners.base.capped_n_steps``), so a 100k-step command trains a few
thousand steps, and ``RLPYT_MAX_RUNS`` runs two runs of a launched grid.  What is not run is named:

- shell lines matched by ``SKIP_LINES`` (a GPU, a cluster, more CPUs than CI has, or
  ``make`` targets that CI itself runs), each with its reason;
- Python blocks after ``<!-- docs-test: needs-gpu -->`` (skipped) or
  ``<!-- docs-test: fragment -->`` (an excerpt or a signature listing, not a program:
  compiled, so its syntax holds, but not run);
- ``>>>`` blocks run as doctests.

Shell blocks run in one test, one after the other in one working directory, as a
reader would type them (later commands use the runs of earlier ones); a line that
appears on several pages runs once.  Python blocks run each in a fresh directory.
"""

from __future__ import annotations

import ast
import doctest
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT)
                               for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
MAX_STEPS = "2000"
MAX_RUNS = "2"
TIMEOUT_S = 300
TAG = re.compile(r"<!--\s*docs-test:\s*([\w-]+)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
TAGS = {"fragment", "needs-gpu", "needs-cluster"}

# (pattern, reason): shell lines that are not run, and why.
SKIP_LINES = [
    (r"^torchrun\b.*--nnodes", "needs a cluster (several machines with GPUs)"),
    (r"--cuda-idx", "needs a GPU"),
    (r"^nvidia-smi\b", "needs a GPU"),
    (r"--ray-address", "needs a running Ray cluster"),
    (r"^make test\b", "CI runs it: make test is lint + docs + this suite"),
    (r"^make docs\b", "CI runs it (make test builds the site with --strict)"),
]


@dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    tag: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def extract_blocks(lang: str) -> list[Block]:
    blocks = []
    for page in PAGES:
        with open(os.path.join(ROOT, page)) as f:
            text = f.read()
        for match in FENCE.finditer(text):
            if match.group(1) != lang:
                continue
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            tag = TAG.match(before.strip())
            if tag and tag.group(1) not in TAGS:
                raise ValueError(f"{page}: unknown docs-test tag {tag.group(1)!r}; "
                                 f"valid: {sorted(TAGS)}")
            blocks.append(Block(page, text[:match.start()].count("\n") + 1, lang,
                                match.group(2), tag.group(1) if tag else None))
    return blocks


def shell_commands(text: str) -> list[str]:
    """The commands of a shell block, as written: continuation lines joined, comments
    (a ``#`` outside quotes, at the start or after a blank) removed."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        command = " ".join(_strip_comment(line).split())
        if command:
            commands.append(command)
    return commands


def _strip_comment(line: str) -> str:
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def skip_reason(command: str) -> str | None:
    for pattern, reason in SKIP_LINES:
        if re.search(pattern, command):
            return reason
    words = shlex.split(command)
    if "--affinity-code" in words:  # e.g. 8cpu_2cpr: a machine with that many CPUs
        code = words[words.index("--affinity-code") + 1]
        need = int(re.match(r"(\d+)cpu", code).group(1))
        if need > len(os.sched_getaffinity(0)):
            return f"needs {need} CPUs (affinity code {code})"
    return None


def run_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["RLPYT_MAX_STEPS"] = MAX_STEPS
    env["RLPYT_MAX_RUNS"] = MAX_RUNS  # a launched grid runs this many of its runs
    env.pop("RLPYT_DEBUG", None)
    return env


def run(command, cwd, shell=False) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=run_env(), shell=shell, text=True,
                          capture_output=True, timeout=TIMEOUT_S)


def make_command(command: str, workdir: str) -> str:
    """``make demo`` as written, with this test's venv and a demo dir of its own (make
    variables on the command line, the text of the target unchanged)."""
    venv = sys.prefix
    stamp = os.path.join(venv, ".installed-stamp")
    return (f"{command} -C {shlex.quote(ROOT)} VENV={shlex.quote(venv)} "
            f"DEMO_DIR={shlex.quote(os.path.join(workdir, 'runs', 'demo'))} "
            f"-o {shlex.quote(stamp)}")


SHELL_BLOCKS = extract_blocks("bash")
PYTHON_BLOCKS = extract_blocks("python")


@pytest.mark.slow  # Two dozen CLI processes one after another: minutes of CPU.
def test_shell_blocks_run_as_written(tmp_path):
    """Every shell line of the pages, in page order, in one working directory (with the
    repo's examples/ in it), as a reader would type them; then ``make demo`` once more,
    which starts a new run and prints a short summary. One test, so that the order
    holds under any pytest-xdist mode."""
    workdir = str(tmp_path)
    os.symlink(os.path.join(ROOT, "examples"), tmp_path / "examples")
    ran, not_run = set(), []
    for block in SHELL_BLOCKS:
        for command in shell_commands(block.text):
            reason = skip_reason(command)
            if reason is None and command.startswith("make ") and not shutil.which("make"):
                reason = "no make on this machine"
            if reason:
                not_run.append(f"{block.id}: {command!r}: {reason}")
                continue
            if command in ran:  # the same line on another page: run once
                continue
            line = make_command(command, workdir) if command.startswith("make ") else command
            result = run(line, workdir, shell=True)
            assert result.returncode == 0, (
                f"{block.id}: `{command}` exited {result.returncode}\n"
                f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}")
            ran.add(command)
    print("not run:\n" + "\n".join(not_run))  # shown with pytest -rP
    assert all(": needs " in n or ": CI runs it" in n or "no make" in n for n in not_run)
    if "make demo" in ran:
        _check_make_demo_again(workdir)


def _check_make_demo_again(workdir):
    """A second ``make demo`` starts a new run and prints a few lines, not the table."""
    demo = os.path.join(workdir, "runs", "demo")
    before = [n for n in os.listdir(demo) if n.startswith("run_")]
    result = run(make_command("make demo", workdir), workdir, shell=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    runs = [n for n in os.listdir(demo) if n.startswith("run_")]
    assert len(runs) == len(before) + 1 >= 2, runs
    lines = result.stdout.splitlines()
    assert len(lines) < 25, result.stdout
    assert any(line.startswith("Final evaluation return:") for line in lines)
    assert any("learning_curve.png" in line for line in lines)
    assert "LossStd" not in result.stdout


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.id for b in PYTHON_BLOCKS])
def test_python_block_runs_as_written(block, tmp_path):
    if block.text.lstrip().startswith(">>>"):
        examples = doctest.DocTestParser().get_examples(block.text)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        test = doctest.DocTest(examples, _doctest_globals(block.text), block.id, block.page,
                               block.line, None)
        runner.run(test)
        assert runner.failures == 0, f"{block.id}: the doctest output differs"
        return
    if block.tag == "needs-gpu":
        pytest.skip(f"{block.id}: needs a GPU")
    if block.tag == "needs-cluster":
        pytest.skip(f"{block.id}: needs a cluster")
    if block.tag == "fragment":
        ast.parse(block.text if not block.text.startswith(" ") else _dedent(block.text))
        return  # an excerpt: its syntax is checked, it is not a program
    script = tmp_path / "block.py"
    script.write_text(block.text)
    result = run([sys.executable, str(script)], str(tmp_path))
    assert result.returncode == 0, (
        f"{block.id} exited {result.returncode}\n--- stdout\n{result.stdout[-4000:]}\n"
        f"--- stderr\n{result.stderr[-4000:]}")


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)


def _doctest_globals(text: str) -> dict:
    """The names a ``>>>`` block calls, imported from where the API pages say."""
    from rlpyt.utils.launching import affinity

    return {name: getattr(affinity, name) for name in affinity.__all__}


def test_every_block_is_run_or_named():
    """A block's tag is one the test knows, and most Python blocks are real programs."""
    run_blocks = [b for b in PYTHON_BLOCKS if b.tag is None]
    assert len(run_blocks) >= 8, [b.id for b in run_blocks]
    assert SHELL_BLOCKS, "no shell blocks found"
