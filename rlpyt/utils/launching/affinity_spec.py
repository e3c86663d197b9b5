"""The affinity code format: tags, the validated machine spec, parsing.

``rlpyt.utils.launching.affinity`` is the public interface; this module holds the
rules a code must follow, so that every code that parses describes a layout in
which every run gets whole cores and at least one sampler worker.
"""

from __future__ import annotations

import dataclasses
import operator
import warnings
from typing import Any

from rlpyt.utils.launching.affinity_layout import slot_parts
from rlpyt.utils.launching.affinity_sizes import AffinitySizes

__all__ = ["BOOL_KEYS", "KEYWORDS", "RUN_SLOT_TAG", "TAGS", "AffinitySpec", "check_slot",
           "parse_code", "spec_from_kwargs"]

RUN_SLOT_TAG = "slt"
# Keyword -> tag, in the order tags appear in a code.
TAGS = {
    "n_cpu_core": "cpu",
    "n_gpu": "gpu",
    "contexts_per_gpu": "cxg",
    "gpu_per_run": "gpr",
    "cpu_per_run": "cpr",
    "cpu_per_worker": "cpw",
    "cpu_reserved": "res",
    "hyperthread_offset": "hto",
    "n_socket": "skt",
    "async_sample": "ass",
    "sample_gpu_per_run": "sgr",
    "optim_sample_share_gpu": "oss",
    "alternating": "alt",
    "set_affinity": "saf",
}
KEYWORDS = {tag: key for key, tag in TAGS.items()}
BOOL_KEYS = ("async_sample", "optim_sample_share_gpu", "alternating", "set_affinity")


@dataclasses.dataclass(frozen=True)
class AffinitySpec(AffinitySizes):
    """A validated machine description; see ``encode_affinity`` for each field."""

    @property
    def n_cpu_index(self) -> int:
        """CPU indices the layout spans: up to its last core's hyperthread sibling."""
        last = max(core for slot in range(self.n_run_slots)
                   for part in slot_parts(self, slot) for core in part.cores)
        return last + 1 + (self.hyperthread_offset or 0)

    # ---- codes -------------------------------------------------------------------------
    def to_code(self, run_slot: int | None = None) -> str:
        parts = [] if run_slot is None else [f"{run_slot}{RUN_SLOT_TAG}"]
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "n_cpu_core" or value != field.default:
                parts.append(f"{int(value)}{TAGS[field.name]}")
        return "_".join(parts)

    # ---- validation ----------------------------------------------------------------------
    def check(self) -> None:
        """Raise ValueError naming the first keyword that cannot work, and why; warn
        (``UserWarning``) where a layout leaves GPUs or cores unused."""
        self._check_ranges()
        if self.n_gpu == 0:
            self._check_cpu_mode()
        else:
            self._check_gpu_mode()
        self._check_workers()
        self._check_sockets()
        self._check_layout()

    def _check_ranges(self) -> None:
        minimums = dict(
            n_cpu_core=1, n_gpu=0, contexts_per_gpu=1, gpu_per_run=1, cpu_per_run=1,
            cpu_per_worker=1, cpu_reserved=0, sample_gpu_per_run=0,
        )
        for key, low in minimums.items():
            value = getattr(self, key)
            if value < low:
                raise ValueError(f"{key}={value} is invalid: it must be an integer >= {low}")
        hto = self.hyperthread_offset
        if hto is not None and hto < self.n_cpu_core:
            raise ValueError(
                f"hyperthread_offset={hto} is invalid: siblings of the {self.n_cpu_core} "
                f"cores would overlap the cores themselves; use None (no hyperthreads) or "
                f"an offset >= n_cpu_core={self.n_cpu_core}"
            )
        if self.n_socket is not None and self.n_socket < 2:
            raise ValueError(f"n_socket={self.n_socket} is invalid: use None (one) or >= 2")
        if not self.async_sample:
            for key in ("sample_gpu_per_run", "optim_sample_share_gpu"):
                if getattr(self, key):
                    raise ValueError(f"{key}={getattr(self, key)} needs async_sample=True")

    def _check_cpu_mode(self) -> None:
        for key in ("contexts_per_gpu", "sample_gpu_per_run"):
            if getattr(self, key) != getattr(AffinitySpec, key):
                raise ValueError(f"{key}={getattr(self, key)} needs n_gpu > 0 (n_gpu=0)")
        if self.optim_sample_share_gpu:
            raise ValueError("optim_sample_share_gpu=True needs n_gpu > 0 (n_gpu=0)")
        if self.gpu_per_run > 1 and self.async_sample:
            raise ValueError(
                f"gpu_per_run={self.gpu_per_run} with n_gpu=0 makes CPU replicas of a sync "
                f"run (SyncRl ranks), which async_sample=True cannot use; use gpu_per_run=1"
            )
        if self.n_cpu_core % self.cores_per_run:
            fits = [d for d in range(1, self.n_cpu_core + 1)
                    if self.n_cpu_core % (d * self.gpu_per_run) == 0]
            replicas = f" x gpu_per_run={self.gpu_per_run} CPU replicas" \
                if self.gpu_per_run > 1 else ""
            raise ValueError(
                f"cpu_per_run={self.cpu_per_run}{replicas} does not divide "
                f"n_cpu_core={self.n_cpu_core} into whole run slots; cpu_per_run values that "
                f"fit: {fits}"
            )

    def _check_gpu_mode(self) -> None:
        if self.async_sample:
            self._check_async_gpus()
            return
        n_context = self.n_gpu * self.contexts_per_gpu
        if self.n_cpu_core % n_context:
            raise ValueError(
                f"n_cpu_core={self.n_cpu_core} does not divide evenly among "
                f"n_gpu*contexts_per_gpu={n_context} GPU contexts; use a multiple of "
                f"{n_context} (e.g. {max(n_context, self.n_cpu_core // n_context * n_context)})"
            )
        if self.n_gpu < self.gpu_per_run:
            raise ValueError(f"n_gpu={self.n_gpu} is fewer than gpu_per_run={self.gpu_per_run}")
        if self.n_gpu % self.gpu_per_run:
            _warn(f"n_gpu={self.n_gpu} is not a multiple of gpu_per_run={self.gpu_per_run}: "
                  f"{self.n_gpu % self.gpu_per_run} GPU(s) stay unused")

    def _check_async_gpus(self) -> None:
        """Async runs with GPUs, as classic rlpyt lays them out (``affinity_layout``)."""
        held = (f"the {self.gpus_per_run} GPUs each run holds (gpu_per_run={self.gpu_per_run}, "
                f"sample_gpu_per_run={self.sample_gpu_per_run}, optim_sample_share_gpu="
                f"{self.optim_sample_share_gpu})")
        if self.contexts_per_gpu > 1:
            raise ValueError(
                f"contexts_per_gpu={self.contexts_per_gpu} with async_sample=True is not "
                f"supported: async runs hold whole GPUs; use contexts_per_gpu=1")
        if self.n_gpu < self.gpus_per_run:
            raise ValueError(f"n_gpu={self.n_gpu} is fewer than {held}")
        if self.n_gpu % self.gpus_per_run:
            _warn(f"n_gpu={self.n_gpu} is not a multiple of {held}: "
                  f"{self.n_gpu % self.gpus_per_run} GPU(s) stay unused")
        if self.n_cpu_core % self.n_run_slots:
            _warn(f"n_cpu_core={self.n_cpu_core} does not split evenly among the "
                  f"{self.n_run_slots} runs: each gets {self.cores_per_run} cores and "
                  f"{self.n_cpu_core % self.n_run_slots} stay unused")
        if self.optim_sample_share_gpu and self.sample_gpu_per_run not in (0, self.gpu_per_run):
            _warn(f"sample_gpu_per_run={self.sample_gpu_per_run} is ignored: with "
                  f"optim_sample_share_gpu=True each of the gpu_per_run={self.gpu_per_run} "
                  f"optimizer GPUs also samples (as in classic rlpyt)")

    def _check_workers(self) -> None:
        """Every sampler must get at least one worker of ``cpu_per_worker`` whole cores."""
        cpw = self.cpu_per_worker
        if self.async_sample:
            self._check_async_workers()
            return
        per_replica = self.cores_per_context if self.n_gpu else self.cpu_per_run
        cores = per_replica - self.cpu_reserved
        if cores < cpw or cores % cpw:
            raise ValueError(
                f"cpu_per_worker={cpw} does not fit the {cores} worker cores ({per_replica} "
                f"cores per run{' replica' if self.n_gpu else ''} minus cpu_reserved="
                f"{self.cpu_reserved}); workers need a positive multiple of cpu_per_worker"
            )

    def _check_async_workers(self) -> None:
        cpw, n_opt = self.cpu_per_worker, self.gpu_per_run * self.optimizer_cores
        left = self.cores_per_run - n_opt
        n_sampler = max(self.sample_gpus, 1)
        per_sampler = left // cpw * cpw // n_sampler
        if self.n_gpu:
            where = (f"{self.cores_per_run} cores per run minus {n_opt} for the optimizer(s) "
                     f"(cpu_reserved={self.cpu_reserved}, at least 1 per optimizer), split "
                     f"among {n_sampler} sampler(s)")
        else:  # no GPU: speak of the CPU cores and the keyword that sets them
            where = (f"cpu_per_run={self.cpu_per_run} CPU cores per run minus {n_opt} for the "
                     f"optimizer (cpu_reserved={self.cpu_reserved}, at least 1)")
        if per_sampler < cpw:
            raise ValueError(
                f"cpu_per_worker={cpw} does not fit the sampler cores ({where}): each sampler "
                f"needs at least cpu_per_worker cores" + self._async_cpu_advice())
        idle = left - per_sampler // cpw * cpw * n_sampler
        if idle:
            _warn(f"cpu_per_worker={cpw}: {idle} of the {left} sampler cores of each run get no "
                  f"worker ({where})")

    def _async_cpu_advice(self) -> str:
        """For an async layout without GPUs: the ``cpu_per_run`` values that would fit."""
        if not self.async_sample or self.n_gpu:
            return ""
        cpw, opt = self.cpu_per_worker, self.optimizer_cores
        fits = [c for c in range(opt + cpw, self.n_cpu_core + 1)
                if self.n_cpu_core % c == 0 and (c - opt) % cpw == 0]
        if self.n_cpu_core < opt + cpw:
            return (f"; n_cpu_core={self.n_cpu_core} is too few CPU cores for an async run "
                    f"(it needs {opt + cpw}: the optimizer's and a sampler worker's)")
        if not fits:
            return (f"; no cpu_per_run fits: {opt} optimizer core(s) plus a multiple of "
                    f"cpu_per_worker={cpw} must divide n_cpu_core={self.n_cpu_core}; change "
                    f"cpu_per_worker or cpu_reserved")
        return f"; cpu_per_run values that fit n_cpu_core={self.n_cpu_core}: {fits}"

    def _check_sockets(self) -> None:
        n_socket = self.n_sockets
        if n_socket == 1:
            return
        if self.n_cpu_core % n_socket:
            raise ValueError(
                f"n_socket={n_socket} must divide n_cpu_core={self.n_cpu_core} so that each "
                f"socket holds the same share")
        hto = self.hyperthread_offset
        if hto and hto % n_socket:
            raise ValueError(
                f"n_socket={n_socket} must divide hyperthread_offset={hto} (the machine's "
                f"cores, spread evenly over its sockets)")
        if self.async_sample and self.n_gpu:
            self._check_async_sockets()
            return
        # Blocks (runs, contexts or replicas) are laid out contiguously, so each stays on
        # one socket exactly when the blocks divide evenly over the sockets (or a block
        # spans whole sockets).
        if self.n_gpu:
            n_block, what = self.n_gpu * self.contexts_per_gpu, "GPU contexts"
        else:
            per = self.cores_per_run if self.async_sample else self.cpu_per_run
            n_block, what = self.n_cpu_core // per, "runs" if self.async_sample or \
                self.gpu_per_run == 1 else "CPU replicas"
        if n_block % n_socket and n_socket % n_block:
            raise ValueError(
                f"{n_block} {what} do not spread evenly over n_socket={n_socket} sockets (each "
                f"would straddle two); choose a layout whose {what} divide the sockets evenly "
                f"or span whole sockets")

    def _check_async_sockets(self) -> None:
        n_socket, n_run = self.n_sockets, self.n_run_slots
        if self.n_gpu % n_socket:
            raise ValueError(
                f"n_socket={n_socket} must divide n_gpu={self.n_gpu} so that each socket "
                f"holds the same share")
        if self.gpus_per_run <= self.n_gpu // n_socket:
            if n_run % n_socket:
                raise ValueError(
                    f"the {n_run} async runs do not spread evenly over n_socket={n_socket} "
                    f"sockets; choose n_gpu, gpu_per_run and sample_gpu_per_run so that they do")
            return
        span = n_socket // n_run if n_socket % n_run == 0 else 0
        if not span or self.gpu_per_run % span or self.sample_gpus % span \
                or self.optim_sample_share_gpu:
            raise ValueError(
                f"async runs of {self.gpus_per_run} GPUs span sockets of "
                f"{self.n_gpu // n_socket} GPUs (n_socket={n_socket}); that needs whole sockets "
                f"per run, gpu_per_run and sample_gpu_per_run divisible by the sockets per run, "
                f"and optim_sample_share_gpu=False; or use n_socket=None")

    def _check_layout(self) -> None:
        """Lay out every slot and refuse a layout that gives a CPU to two processes."""
        owner: dict[int, str] = {}
        for slot in range(self.n_run_slots):
            for i, part in enumerate(slot_parts(self, slot)):
                name = f"run slot {slot}'s {part.role} {i}"
                for core in part.cores:
                    if core in owner or core >= self.n_machine_cores:
                        clash = f"to {owner[core]} and {name}" if core in owner else \
                            f"beyond the machine's {self.n_machine_cores} cores to {name}"
                        raise ValueError(
                            f"this layout (n_cpu_core={self.n_cpu_core}, n_gpu={self.n_gpu}, "
                            f"gpu_per_run={self.gpu_per_run}, n_socket={self.n_socket}, "
                            f"hyperthread_offset={self.hyperthread_offset}) would give core "
                            f"{core} {clash}; choose another n_socket or gpu_per_run")
                    owner[core] = name


def _warn(message: str) -> None:
    warnings.warn(f"affinity: {message}", UserWarning, stacklevel=4)


def spec_from_kwargs(**kwargs: Any) -> AffinitySpec:
    """Normalise classic spellings, then build and validate a spec."""
    for key in BOOL_KEYS:
        if kwargs[key] not in (True, False, 0, 1):
            raise ValueError(f"{key}={kwargs[key]!r} is invalid: use True or False")
        kwargs[key] = bool(kwargs[key])
    for key, value in kwargs.items():
        if key not in BOOL_KEYS and value is not None:
            try:
                kwargs[key] = operator.index(value)
            except TypeError:
                raise ValueError(f"{key}={value!r} is invalid: it must be an integer") from None
    if kwargs["hyperthread_offset"] == 0:  # Classic rlpyt spelled "no hyperthreads" as 0.
        kwargs["hyperthread_offset"] = None
    if kwargs["n_socket"] == 1:
        kwargs["n_socket"] = None
    cpu_per_run = kwargs["cpu_per_run"]
    if kwargs["n_gpu"] > 0:  # With GPUs the cores per run follow from the GPU layout.
        kwargs["cpu_per_run"] = 1
    spec = AffinitySpec(**kwargs)
    spec.check()
    if spec.n_gpu > 0 and cpu_per_run not in (1, spec.cores_per_run):
        raise ValueError(
            f"cpu_per_run={cpu_per_run} conflicts with the GPU layout: with n_gpu={spec.n_gpu} "
            f"each run gets n_cpu_core/(n_gpu*contexts_per_gpu)*GPUs per run = "
            f"{spec.cores_per_run} cores; leave cpu_per_run at 1"
        )
    return spec


def parse_code(code: str) -> tuple[int | None, AffinitySpec]:
    """``(run slot or None, validated spec)`` of a code; parts may come in any order."""
    if not isinstance(code, str) or not code:
        raise ValueError(f"affinity code {code!r} is invalid: expected a string like '4cpu_2cpr'")
    values: dict[str, int] = {}
    for part in code.split("_"):
        digits = len(part) - len(part.lstrip("0123456789"))
        number, tag = part[:digits], part[digits:]
        if not number or (tag not in KEYWORDS and tag != RUN_SLOT_TAG):
            known = ", ".join([RUN_SLOT_TAG, *KEYWORDS])
            raise ValueError(
                f"affinity code {code!r} has an invalid part {part!r}: each part is a number "
                f"followed by one of the tags {known}"
            )
        if tag in values:
            raise ValueError(f"affinity code {code!r} repeats the tag {tag!r}")
        values[tag] = int(number)
    run_slot = values.pop(RUN_SLOT_TAG, None)
    kwargs = {f.name: f.default for f in dataclasses.fields(AffinitySpec)}
    kwargs.update({KEYWORDS[tag]: value for tag, value in values.items()})
    try:
        spec = spec_from_kwargs(**kwargs)
    except ValueError as error:
        raise ValueError(f"affinity code {code!r}: {error}") from None
    if run_slot is not None:
        check_slot(run_slot, spec)
    return run_slot, spec


def check_slot(run_slot: int, spec: AffinitySpec) -> None:
    """Raise ValueError unless ``run_slot`` is one of the layout's slots."""
    if not isinstance(run_slot, int) or not 0 <= run_slot < spec.n_run_slots:
        raise ValueError(
            f"run_slot={run_slot!r} is invalid: this layout has {spec.n_run_slots} run slots "
            f"(0..{spec.n_run_slots - 1})"
        )
