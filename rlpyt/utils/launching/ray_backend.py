"""The Ray backend of ``run_experiments``: one Ray task per run.

Each run becomes a task asking Ray for one run's resources from the affinity code
(``run_resources``: its logical CPUs, and its GPUs, fractional when runs share a
GPU). Ray decides where and when a run starts, so the train script receives the
code of a one-run machine (``single_run_code``): its thread counts, workers and
GPU split are as in the full layout, CUDA indices count from 0 inside the GPUs
Ray assigned (Ray sets ``CUDA_VISIBLE_DEVICES``), and CPUs are not pinned (Ray
counts CPUs but does not assign CPU ids).

Outputs land in ``exp_dir`` as with the local backend. A task on a node that sees
``exp_dir`` (same machine or shared filesystem) writes there directly; a task on a
node that does not runs in a temporary directory and sends the run dir back to
the driver as an archive. The script and rlpyt must be importable on every node.
"""

from __future__ import annotations

import dataclasses
import io
import os
import tarfile
import tempfile
import time
import uuid

from rlpyt.utils.launching.affinity import run_resources, single_run_code
from rlpyt.utils.launching.cpus import LAUNCHER_CPUS_ENV
from rlpyt.utils.launching.runs import (
    LOG_FILE,
    RunRequest,
    RunResult,
    execute_run,
    set_aside_stale_run_dir,
)
from rlpyt.utils.launching.variant import save_variant
from rlpyt.utils.supervisor import RAY_TASK_CANCEL_S

__all__ = ["run_on_ray", "run_task", "sees_token", "write_token"]

TOKEN_FILE = ".ray_launch_token"


def _import_ray():
    try:
        import ray
    except ImportError as error:
        raise ImportError(
            "backend='ray' needs Ray: pip install 'rlpyt[ray]' (the local backend needs "
            "nothing extra)"
        ) from error
    return ray


def run_on_ray(
    pending: list[RunRequest],
    affinity_code: str,
    exp_dir: str,
    ray_address: str | None,
    say,
    record,
) -> None:
    """Run ``pending`` as Ray tasks and ``record`` each result as it arrives.

    Starts (and at the end shuts down) a Ray instance unless Ray is already
    initialised in this process, which is then used as it is. On an exception
    (Ctrl-C) the tasks are cancelled, their runs stopped, and it propagates.
    """
    ray = _import_ray()
    if not pending:
        return
    n_cpus, n_gpus = run_resources(affinity_code)
    if n_gpus > 1 and n_gpus != int(n_gpus):
        raise ValueError(
            f"affinity_code={affinity_code!r} gives each run {n_gpus} GPUs, but Ray can share "
            f"only a single GPU fractionally; use contexts_per_gpu=1 with gpu_per_run > 1"
        )
    run_code = single_run_code(affinity_code, set_affinity=False)
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=ray_address, include_dashboard=False)
    elif ray_address is not None:
        say(f"Ray is already initialised in this process; ignoring ray_address={ray_address!r}")
    token = write_token(exp_dir)
    try:
        _check_cluster_fits(ray, n_cpus, n_gpus)
        task = ray.remote(run_task).options(num_cpus=n_cpus, num_gpus=n_gpus, max_retries=0)
        refs = {task.remote(r, run_code, exp_dir, token): r for r in pending}
        say(f"Submitted {len(refs)} runs to Ray, each asking for {n_cpus} CPUs and "
            f"{n_gpus:g} GPUs (run code {run_code})")
        _collect(ray, refs, say, record)
    finally:
        os.remove(os.path.join(exp_dir, TOKEN_FILE))
        if started_here:
            ray.shutdown()


def _check_cluster_fits(ray, n_cpus: int, n_gpus: float) -> None:
    """A run bigger than the whole cluster would wait forever; say so instead."""
    have = ray.cluster_resources()
    if have.get("CPU", 0) < n_cpus or have.get("GPU", 0) < n_gpus:
        raise ValueError(
            f"each run asks Ray for {n_cpus} CPUs and {n_gpus:g} GPUs, but the Ray cluster "
            f"has CPU={have.get('CPU', 0):g}, GPU={have.get('GPU', 0):g}; use an affinity_code "
            f"with smaller runs or a bigger cluster"
        )


def _collect(ray, refs: dict, say, record) -> None:
    total, finished = len(refs), 0
    started = time.time()
    try:
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            for ref in ready:
                request = refs.pop(ref)
                result = _receive(ray, ref, request)
                finished += 1
                say(result.progress_line(finished, total))
                record(result)
    except BaseException:
        if refs:
            say(f"Cancelling {len(refs)} Ray runs ...")
        for ref in refs:
            ray.cancel(ref)  # Raises KeyboardInterrupt in the task: it stops its run.
        ray.wait(list(refs), num_returns=len(refs), timeout=RAY_TASK_CANCEL_S)
        for request in refs.values():
            log_path = os.path.join(request.run_dir, LOG_FILE)
            # A run that started here has a fresh launch.log; others never started
            # (or ran on a node without shared storage, whose files are lost).
            ran = os.path.exists(log_path) and os.path.getmtime(log_path) >= started
            record(RunResult(request.name, "stopped" if ran else "not started", None,
                             request.run_dir, log_path))
        raise


def _receive(ray, ref, request: RunRequest) -> RunResult:
    """The task's result, with a sent-back run dir unpacked into ``exp_dir``."""
    try:
        result, archive = ray.get(ref)
    except ray.exceptions.RayError as error:  # The task itself failed (not the script).
        set_aside_stale_run_dir(request.run_dir)
        os.makedirs(request.run_dir, exist_ok=True)
        log_path = os.path.join(request.run_dir, LOG_FILE)
        with open(log_path, "w") as f:
            f.write(f"# Ray task for {request.name} failed before the run finished:\n{error}\n")
        return RunResult(request.name, "failed", None, request.run_dir, log_path)
    if archive is not None:
        set_aside_stale_run_dir(request.run_dir)
        _unpack(archive, request.run_dir)
        result = dataclasses.replace(
            result, run_dir=request.run_dir, log_path=os.path.join(request.run_dir, LOG_FILE)
        )
    return result


def run_task(
    request: RunRequest, run_code: str, exp_dir: str, token: str
) -> tuple[RunResult, bytes | None]:
    """Body of one Ray task: run the script, return its result (and run dir if remote).

    Args:
        request: the run, with paths as the driver sees them.
        run_code: the one-run affinity code the script receives.
        exp_dir: the driver's experiment directory.
        token: contents of the driver's token file; a node that reads the same
            contents shares the driver's filesystem.
    """
    if not os.path.isfile(request.script):
        raise FileNotFoundError(
            f"script {request.script!r} does not exist on this Ray node; put it on a "
            f"filesystem every node sees, or ship it with Ray's runtime_env"
        )
    env = {LAUNCHER_CPUS_ENV: None}  # The run lays its code over this node's CPUs.
    if sees_token(exp_dir, token):
        return execute_run(request, run_code, env=env), None
    with tempfile.TemporaryDirectory(prefix="rlpyt_run_") as tmp:
        local = dataclasses.replace(request, setting_dir=os.path.join(tmp, request.log_dir))
        save_variant(local.variant, local.setting_dir)
        result = execute_run(local, run_code, env=env)
        return result, _pack(local.run_dir)


def write_token(folder: str, name: str = TOKEN_FILE) -> str:
    """A fresh token written to ``folder/name``: a Ray task that reads the same token
    there sees the driver's filesystem."""
    token = uuid.uuid4().hex
    with open(os.path.join(folder, name), "w") as f:
        f.write(token)
    return token


def sees_token(folder: str, token: str, name: str = TOKEN_FILE) -> bool:
    """Whether this node reads the driver's ``token`` in ``folder/name``."""
    try:
        with open(os.path.join(folder, name)) as f:
            return f.read() == token
    except OSError:
        return False


def _pack(run_dir: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(run_dir, arcname=".")
    return buffer.getvalue()


def _unpack(archive: bytes, run_dir: str) -> None:
    """Extract a run dir archive; only plain files and dirs inside ``run_dir`` are allowed."""
    os.makedirs(run_dir, exist_ok=True)
    root = os.path.realpath(run_dir)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            target = os.path.realpath(os.path.join(root, member.name))
            inside = os.path.commonpath([root, target]) == root
            if not inside or not (member.isfile() or member.isdir()):
                raise ValueError(f"run archive entry {member.name!r} is not a plain file "
                                 f"inside the run dir")
        if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4.
            tar.extractall(run_dir, members=members, filter="data")
        else:
            tar.extractall(run_dir, members=members)
