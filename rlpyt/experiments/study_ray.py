"""``rlpyt tune --backend ray``: the study's trials run by tuners that are Ray tasks.

Each of ``jobs`` Ray tasks is a tuner of its own (``run_study(..., worker=True)``): it
asks the shared Optuna storage for a trial, runs the trial's seeds on its node as
supervised processes, reports their rows and tells the result, until the study has its
trials.  Optuna's storage is what they share, so it must be one every node reaches: a
database URL (``--storage postgresql://...``) on a cluster of several machines, the
study folder's SQLite file on one machine.  The trial folders are written under the
study folder, which must be on a filesystem every node sees.

The driver holds the study folder's lock, makes the study (refusing another plan) and
recovers trials that gone tuners of this machine left running.  Ctrl-C or SIGTERM on the
driver cancel the tasks: each stops its runs and marks its trial interrupted, queued to
run again.  Runs are not pinned (Ray counts CPUs but does not give CPU ids); each task
asks Ray for one CPU per seed.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from rlpyt.experiments.search_space import load_space_file
from rlpyt.experiments.study import TuneSettings, open_study, run_study, study_lock
from rlpyt.utils.launching.ray_backend import sees_token, write_token
from rlpyt.utils.supervisor import RAY_TASK_CANCEL_S

__all__ = ["run_study_on_ray", "tune_worker"]

TOKEN_FILE = ".ray_tune_token"


def run_study_on_ray(settings: TuneSettings, ray_address: str | None = None,
                     say: Callable[[str], None] = print):
    """Run the study with ``settings.jobs`` tuners as Ray tasks; returns the study.

    Starts (and at the end shuts down) Ray unless this process has initialised it:
    without ``ray_address`` a local Ray of its own, with it the cluster it names
    (``"auto"``: the one running on this machine)."""
    try:
        import ray
    except ImportError:
        raise ImportError("--backend ray needs Ray: pip install 'rlpyt[ray]'") from None
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    os.makedirs(settings.study_dir, exist_ok=True)
    started_here = not ray.is_initialized()
    if started_here:
        # Every tuner's lines, not Ray's deduplication of similar ones across tasks.
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        # "local": a Ray of its own, not one another program runs here ("auto" joins that).
        ray.init(address=ray_address or "local", include_dashboard=False)
    token_path = os.path.join(settings.study_dir, TOKEN_FILE)
    try:
        with study_lock(settings.study_dir):
            _check_cluster(ray, settings)
            study = open_study(settings, say)
            token = write_token(settings.study_dir, TOKEN_FILE)
            task = ray.remote(tune_worker).options(num_cpus=settings.seeds, max_retries=0)
            # Each tuner its own sampler seed: the same seed would draw the same trials.
            refs = [task.remote(dataclasses.replace(settings, jobs=1, space=None,
                                                    tune_seed=settings.tune_seed + i), token)
                    for i in range(settings.jobs)]
            say(f"Started {settings.jobs} tuners as Ray tasks, each asking for "
                f"{settings.seeds} CPUs")
            _wait(ray, refs)
    finally:
        if os.path.exists(token_path):
            os.remove(token_path)
        if started_here:
            ray.shutdown()
    return study


def _check_cluster(ray, settings: TuneSettings) -> None:
    have = ray.cluster_resources().get("CPU", 0)
    if have < settings.seeds:
        raise ValueError(f"each tuner asks Ray for {settings.seeds} CPUs (one per seed), but "
                         f"the Ray cluster has {have:g}")
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if len(nodes) > 1 and settings.storage is None:
        raise ValueError(f"the Ray cluster has {len(nodes)} machines, and the study's default "
                         f"storage is a SQLite file: give --storage with a database every "
                         f"machine reaches (postgresql://..., mysql://...)")


def _wait(ray, refs: list) -> None:
    try:
        for ref in refs:
            ray.get(ref)
    except BaseException:
        for ref in refs:
            ray.cancel(ref)  # KeyboardInterrupt in the task: it stops its runs.
        ray.wait(refs, num_returns=len(refs), timeout=RAY_TASK_CANCEL_S)
        raise


def tune_worker(settings: TuneSettings, token: str) -> None:
    """Body of one Ray task: a tuner of the study, on this node."""
    if not sees_token(settings.study_dir, token, TOKEN_FILE):
        raise FileNotFoundError(
            f"this Ray node does not see the study folder {settings.study_dir}: put it on a "
            f"filesystem every node sees")
    if settings.space_file is not None:  # The function itself does not pickle.
        settings = dataclasses.replace(settings, space=load_space_file(settings.space_file))
    run_study(settings, say=lambda line: print(line, flush=True), worker=True)
