"""A sampler's Ray actors: connecting to Ray, starting, calling, replacing, stopping them.

Faults, and what each becomes:

* **An actor dies** (its process killed, its node removed): Ray restarts it (up to
  ``max_actor_restarts`` times) and the group sets the replacement up again with
  fresh seeds derived from the run seed, the actor's index and its restart count,
  then repeats the command the dead actor did not finish.  Nothing of the dead
  actor's unfinished command is used: its batch never arrived.  If no replacement is
  ready within ``restart_timeout`` seconds (no node has the resources left), or the
  restarts are used up, ``ActorError`` names the actor, its envs and its last node.
* **An env raises** inside an actor: that is a bug, not a fault to retry.
  ``ActorError`` carries the env's traceback and the run stops.
* **An env hangs**: while a command runs past ``step_timeout``, the group asks the
  actor (in a separate concurrency group, so the question is answered beside the
  hung call) how long its current env call has run; past ``step_timeout`` the run
  stops with ``ActorError`` showing the actor's Python stack.

``shutdown()`` kills every actor (an actor blocked in a hung env call too) and,
when the group started or connected Ray itself, disconnects (a local Ray it started
stops with it).
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass, field

import numpy as np

from rlpyt.samplers.base import WorkerError
from rlpyt.samplers.ray_.actor import LOST, EnvActor
from rlpyt.utils.supervisor import RAY_ACTORS_CLOSE_S

__all__ = ["ActorError", "ActorGroup", "ActorSpec", "import_ray"]

log = logging.getLogger(__name__)

POLL_S = 0.5  # How often a wait looks for hung envs.
PROBE_TIMEOUT_S = 10.0  # How long a hung actor may take to answer ``busy``.
CLOSE_GRACE_S = RAY_ACTORS_CLOSE_S  # How long actors get to close their envs at shutdown.
RESTARTING_POLL_S = 0.5  # How often to ask an actor Ray is restarting whether it is back.
PROBE_GROUP = "probe"


class ActorError(WorkerError):
    """A Ray sampler actor failed for good; the message names it, its envs and its node."""


def import_ray():
    try:
        import ray
    except ImportError as error:
        raise ImportError("the Ray samplers need Ray: pip install 'rlpyt[ray]'") from error
    return ray


@dataclass
class ActorSpec:
    """What one actor owns (fixed for the run) and where it last ran."""

    index: int
    env_ranks: list
    env_slice: tuple
    env_seeds: list
    eval_env_ranks: list
    eval_slice: tuple
    eval_env_seeds: list
    seed: int
    restarts: int = 0
    node_id: str = "?"
    node_ip: str = "?"
    pid: int = 0
    handle: object = field(default=None, repr=False)

    def setup_args(self) -> dict:
        """Seeds for the actor's current life: the run's own at first; after the
        ``r``-th restart, derived from them and ``r`` (reproducible from the run seed,
        and not a replay of the lost envs' episodes)."""
        r = self.restarts

        def reseed(seeds):
            if r == 0:
                return [int(s) for s in seeds]
            return [int(np.random.SeedSequence([int(s), r]).generate_state(1)[0]) for s in seeds]

        return dict(index=self.index, env_ranks=list(self.env_ranks),
                    env_seeds=reseed(self.env_seeds), eval_env_ranks=list(self.eval_env_ranks),
                    eval_env_seeds=reseed(self.eval_env_seeds), seed=reseed([self.seed])[0])

    def describe(self) -> str:
        lo, hi = self.env_ranks[0], self.env_ranks[-1]
        return (f"Ray sampler actor {self.index} (env ranks {lo}-{hi}) on node {self.node_ip} "
                f"(node id {self.node_id[:12]}, pid {self.pid})")


class ActorGroup:
    """Starts ``specs`` as Ray actors and runs the sampler's commands on them.

    Args:
        specs: one ``ActorSpec`` per actor.
        common: settings every actor gets (``EnvActor``'s ``common``).
        actor_resources: Ray resources per actor: ``num_cpus``, ``num_gpus`` and custom
            resources by name.
        max_actor_restarts: how often Ray may restart each actor.
        restart_timeout: seconds to wait for an actor to be placed and set up (at start
            and after each restart).
        step_timeout: seconds one env call may take (None: no limit).
        ray_address: passed to ``ray.init`` when Ray is not yet initialised here.
        local_num_cpus: logical CPUs of a local Ray this group starts itself.
    """

    def __init__(self, specs, common, actor_resources, max_actor_restarts, restart_timeout,
                 step_timeout, ray_address, local_num_cpus):
        self.specs = specs
        self.common = common
        self.actor_resources = dict(actor_resources)
        self.max_actor_restarts = max_actor_restarts
        self.restart_timeout = restart_timeout
        self.step_timeout = step_timeout
        self.ray_address = ray_address
        self.local_num_cpus = local_num_cpus
        self.n_restarts = 0
        self.connected_here = False
        self.ray = None
        self._common_ref = None
        # Called on every poll of a wait (an asynchronous sampler's heartbeat and stop
        # check: a wait for a replacement may take up to restart_timeout).
        self.on_wait = None

    # ---- start --------------------------------------------------------------------------
    def start(self) -> None:
        """Connect to (or start) Ray, create every actor and set it up."""
        ray = self.ray = import_ray()
        if not ray.is_initialized():
            connect(ray, self.ray_address, self.local_num_cpus)
            self.connected_here = True
        options = dict(max_restarts=self.max_actor_restarts, max_task_retries=0,
                       scheduling_strategy="SPREAD")
        resources = dict(self.actor_resources)
        options["num_cpus"] = resources.pop("num_cpus", 1)
        options["num_gpus"] = resources.pop("num_gpus", 0)
        if resources:
            options["resources"] = resources
        ActorCls = ray.remote(concurrency_groups={PROBE_GROUP: 1})(EnvActor).options(**options)
        self._common_ref = ray.put(self.common)  # Once, not once per actor.
        for spec in self.specs:
            spec.handle = ActorCls.remote()
        self._setup(range(len(self.specs)), "start")

    def _setup(self, indices, why: str) -> None:
        """Set actors up (their envs built, reset and decorrelated), waiting at most
        ``restart_timeout`` for each to be placed and ready.  An actor Ray is still
        restarting is asked again shortly; one that dies again counts as a restart."""
        refs = {i: self._setup_call(i) for i in indices}
        deadline = time.monotonic() + self.restart_timeout
        while refs:
            results, lost = self._wait(refs, deadline)
            if results is None:  # Deadline passed.
                self._not_ready(refs, why)
            for i, info in results.items():
                spec = self.specs[i]
                spec.node_id, spec.node_ip, spec.pid = info["node_id"], info["node_ip"], info["pid"]
            if any(not died for _, died in lost.values()):
                time.sleep(RESTARTING_POLL_S)
                if self.on_wait is not None:
                    self.on_wait()
            for i, (cause, died) in lost.items():
                if died:
                    self._count_restart(i, cause)
                refs[i] = self._setup_call(i)
            refs = {i: r for i, r in refs.items() if i not in results}
            if time.monotonic() >= deadline and refs:
                self._not_ready(refs, why)

    def _setup_call(self, i: int):
        # The common settings in a list: Ray passes the ObjectRef, the actor fetches it.
        return self.specs[i].handle.setup.remote([self._common_ref], self.specs[i].setup_args())

    def _not_ready(self, refs, why: str):
        names = "; ".join(self.specs[i].describe() for i in refs)
        if why == "start":
            cluster = self.ray.cluster_resources()
            raise ActorError(
                f"{len(refs)} Ray sampler actor(s) not started within restart_timeout="
                f"{self.restart_timeout:g} s: {names}. Each actor needs {self._resources()}; "
                f"the cluster has {cluster}: lower n_actors or actor_resources, or add nodes")
        raise ActorError(
            f"{names} died and no replacement was ready within restart_timeout="
            f"{self.restart_timeout:g} s (Ray could not place it: no node left with "
            f"{self._resources()} free?); the run stops. Resume it from its checkpoint.")

    def _resources(self) -> dict:
        return {"num_cpus": 1, **self.actor_resources}

    # ---- commands -----------------------------------------------------------------------
    def call(self, method: str, args_of, indices, retry: bool = True) -> dict:
        """Run ``method(*args_of(i))`` on the actors ``indices``; returns ``{i: result}``.

        A dead actor is replaced (``replace``); with ``retry`` its command then runs
        again on the replacement, without it ``Restarted`` is raised once every actor
        is ready again (a lockstep evaluation then starts over).
        """
        refs = {i: getattr(self.specs[i].handle, method).remote(*args_of(i)) for i in indices}
        results = {}
        restarted = False
        while refs:
            done, lost = self._wait(refs, None)
            results.update(done)
            for i, (cause, _) in lost.items():
                self.replace(i, cause)
                restarted = True
                if retry:
                    refs[i] = getattr(self.specs[i].handle, method).remote(*args_of(i))
            refs = {i: r for i, r in refs.items() if i not in done and (retry or i not in lost)}
        if restarted and not retry:
            raise Restarted()
        return results

    def replace(self, i: int, cause: str) -> None:
        """Actor ``i`` died (``cause``): wait for Ray's replacement and set it up."""
        self._count_restart(i, cause)
        self._setup([i], "restart")

    def _count_restart(self, i: int, cause: str) -> None:
        spec = self.specs[i]
        spec.restarts += 1
        self.n_restarts += 1
        if spec.restarts > self.max_actor_restarts:
            raise ActorError(f"{spec.describe()} died ({cause}) after using up its "
                             f"max_actor_restarts={self.max_actor_restarts} restarts; "
                             f"the run stops")
        log.warning("%s died (%s); waiting up to %g s for Ray to restart it (restart %d of "
                    "at most %d)", spec.describe(), cause, self.restart_timeout, spec.restarts,
                    self.max_actor_restarts)

    def _wait(self, refs: dict, deadline):
        """Wait until every ref in ``refs`` is done or its actor is lost, or ``deadline``
        (``time.monotonic``) passes (then ``(None, {})``).  Returns ``(results, lost)``:
        ``lost`` maps an actor whose process died (or that restarted and lost its
        state) to ``(cause, died)``; ``died`` is False when Ray reports the actor as
        being restarted (a death already seen).  An env that raised, or hung past ``step_timeout``,
        raises ``ActorError``."""
        ray = self.ray
        index = {ref: i for i, ref in refs.items()}
        pending = list(refs.values())
        results, lost = {}, {}
        next_probe = None if self.step_timeout is None else time.monotonic() + self.step_timeout
        while pending:
            timeout = POLL_S if deadline is None else max(0.0, min(POLL_S,
                                                                   deadline - time.monotonic()))
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=timeout)
            for ref in ready:
                self._classify(index[ref], ref, results, lost)
            if self.on_wait is not None:
                self.on_wait()
            if deadline is not None and time.monotonic() >= deadline and pending:
                return None, {}
            if pending and next_probe is not None and time.monotonic() > next_probe:
                self._check_hung([index[r] for r in pending])
                next_probe = time.monotonic() + max(1.0, self.step_timeout / 4)
        return results, lost

    def poll(self, refs: dict, timeout: float) -> tuple[dict, dict]:
        """Like ``_wait`` for at most ``timeout`` seconds, without a hung-env check:
        ``(results, lost)`` of the refs of ``refs`` (``{actor index: ref}``) that are
        done by then; the others are left running.  An env that raised raises
        ``ActorError`` with its traceback."""
        index = {ref: i for i, ref in refs.items()}
        results, lost = {}, {}
        if not refs:
            return results, lost
        # Back as soon as one is done, with every other one done by then.
        ready, rest = self.ray.wait(list(refs.values()), num_returns=1, timeout=timeout)
        if ready and rest:
            ready += self.ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        for ref in ready:
            self._classify(index[ref], ref, results, lost)
        return results, lost

    def _classify(self, i: int, ref, results: dict, lost: dict) -> None:
        """Put the finished call ``ref`` of actor ``i`` into ``results`` or ``lost``."""
        ray = self.ray
        try:
            value = ray.get(ref)
        except ray.exceptions.ActorUnavailableError as e:
            lost[i] = (_cause(e), False)
            return
        except ray.exceptions.RayActorError as e:
            lost[i] = (_cause(e), True)
            return
        except ray.exceptions.RayTaskError as e:
            raise ActorError(f"{self.specs[i].describe()} raised; its traceback:\n"
                             f"{_remote_traceback(e)}") from None
        if isinstance(value, str) and value == LOST:
            lost[i] = ("it was restarted by Ray and lost its envs", True)
        else:
            results[i] = value

    def check_hung(self, indices) -> None:
        """Raise ``ActorError`` with its stack if an env call of one of the actors
        ``indices`` has run past ``step_timeout`` (no check when it is None)."""
        if self.step_timeout is not None and indices:
            self._check_hung(list(indices))

    def _check_hung(self, indices) -> None:
        ray = self.ray
        probes = {i: self.specs[i].handle.busy.options(concurrency_group=PROBE_GROUP).remote()
                  for i in indices}
        for i, ref in probes.items():
            try:
                seconds, stack = ray.get(ref, timeout=PROBE_TIMEOUT_S)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                continue  # Dead (the wait sees it) or not started yet: not a hung env.
            if seconds > self.step_timeout:
                raise ActorError(
                    f"{self.specs[i].describe()}: an env call has not returned after "
                    f"{seconds:.1f} s (step_timeout={self.step_timeout:g} s): the env hangs. "
                    f"The actor's Python stack:\n{stack}")

    # ---- stop -----------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Kill every actor; disconnect from Ray if this group connected (idempotent)."""
        ray = self.ray
        if ray is None:
            return
        self.ray = None
        handles = [s.handle for s in self.specs if s.handle is not None]
        if ray.is_initialized():
            closing = [h.close.remote() for h in handles]
            try:
                ray.wait(closing, num_returns=len(closing), timeout=CLOSE_GRACE_S)
            except Exception:  # noqa: BLE001 - the actors are killed next anyway
                pass
            for h in handles:
                try:
                    ray.kill(h, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
        for s in self.specs:
            s.handle = None
        self._common_ref = None
        if self.connected_here and ray.is_initialized():
            ray.shutdown()

    def pids(self) -> list:
        """``(node_ip, pid)`` of every actor's current process."""
        return [(s.node_ip, s.pid) for s in self.specs]


def connect(ray, address: str | None, local_num_cpus: int) -> None:
    """``ray.init``: join the cluster at ``address``; with None, Ray's default: the
    cluster named by ``RAY_ADDRESS`` or started on this machine by ``ray start`` if
    there is one, else a private local Ray with ``local_num_cpus`` logical CPUs."""
    if address is not None:
        ray.init(address=address, log_to_driver=True)
        return
    try:
        ray.init(num_cpus=local_num_cpus, include_dashboard=False, log_to_driver=True)
    except ValueError as error:
        # Ray found a cluster and refuses to be told its size: join it as it is.
        if "existing cluster" not in str(error):
            raise
        ray.init(log_to_driver=True)


class Restarted(Exception):
    """An actor was replaced while a lockstep command ran (internal to the sampler)."""


def _cause(error) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__


def _remote_traceback(error) -> str:
    """The remote traceback of a ``RayTaskError`` (its text, without Ray's wrapper lines
    and colour codes)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    marker = "Traceback (most recent call last):"
    return text[text.find(marker):] if marker in text else text


def default_local_cpus(n_actors: int, cpus_per_actor: float) -> int:
    """Logical CPUs of a private local Ray: the machine's, or enough for every actor."""
    return max(os.cpu_count() or 1, int(np.ceil(n_actors * cpus_per_actor)))
