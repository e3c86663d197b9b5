"""rlpyt.utils.launching.affinity and .cpus: codes, layouts and their invariants."""

import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rlpyt.utils.launching import cpus as cpus_module
from rlpyt.utils.launching.affinity import (
    affinity_cpus,
    affinity_from_code,
    affinity_gpus,
    decode_affinity,
    encode_affinity,
    get_n_run_slots,
    get_run_slot,
    make_affinity,
    prepend_run_slot,
    quick_affinity_code,
    run_resources,
    single_run_code,
)
from rlpyt.utils.launching.affinity_spec import parse_code
from rlpyt.utils.launching.cpus import (
    LAUNCHER_CPUS_ENV,
    available_cpus,
    detect_hyperthread_offset,
    layout_cpus,
)

# ---------------------------------------------------------------- strategies


@st.composite
def affinity_kwargs(draw):
    """encode_affinity keywords from small ranges; many combinations are invalid."""
    n_gpu = draw(st.sampled_from([0, 0, 1, 2, 4]))
    kwargs = dict(
        n_gpu=n_gpu,
        cpu_per_worker=draw(st.integers(1, 3)),
        cpu_reserved=draw(st.integers(0, 2)),
        alternating=draw(st.booleans()),
        set_affinity=draw(st.booleans()),
        async_sample=draw(st.booleans()),
    )
    if n_gpu == 0:
        kwargs["cpu_per_run"] = draw(st.integers(1, 6))
        kwargs["n_cpu_core"] = kwargs["cpu_per_run"] * draw(st.integers(1, 4))
    else:
        kwargs["contexts_per_gpu"] = draw(st.integers(1, 2))
        kwargs["gpu_per_run"] = draw(st.integers(1, 2))
        per_context = draw(st.integers(1, 6))
        kwargs["n_cpu_core"] = per_context * n_gpu * kwargs["contexts_per_gpu"]
        if kwargs["async_sample"]:
            kwargs["sample_gpu_per_run"] = draw(st.integers(0, 2))
            kwargs["optim_sample_share_gpu"] = draw(st.booleans())
    if draw(st.booleans()):
        kwargs["hyperthread_offset"] = kwargs["n_cpu_core"] + draw(st.integers(0, 3))
    kwargs["n_socket"] = draw(st.sampled_from([None, 2]))
    return kwargs


def try_encode(kwargs):
    try:
        return encode_affinity(**kwargs)
    except ValueError as error:
        # Every rejection names a keyword or the machine it does not fit.
        assert "=" in str(error), str(error)
        return None


def machine_cpus(draw_ids, code):
    """CPU ids for a machine large enough for ``code``: arbitrary, non-contiguous ids."""
    need = parse_code(code)[1].n_cpu_index  # Sockets may leave gaps in the indices.
    return tuple(sorted(draw_ids))[:need] if len(draw_ids) >= need else None


# ---------------------------------------------------------------- helpers


def parts_of(affinity):
    """(kind, part) for every sampler/replica ("sampler") and optimizer part."""
    if isinstance(affinity, list):
        return [("sampler", p) for p in affinity]
    if "optimizer" in affinity:
        sampler = affinity["sampler"]
        samplers = sampler if isinstance(sampler, list) else [sampler]
        return [("optimizer", p) for p in affinity["optimizer"]] + [
            ("sampler", p) for p in samplers
        ]
    return [("sampler", affinity)]


def slot_gpus(affinity):
    return set(affinity_gpus(affinity))


# ---------------------------------------------------------------- round trips


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(kwargs=affinity_kwargs())
def test_codes_round_trip_exactly(kwargs):
    code = try_encode(kwargs)
    assume(code is not None)
    decoded = decode_affinity(code)
    assert decoded["run_slot"] is None
    assert encode_affinity(**decoded) == code
    # Decoding gives back every keyword as given (after the documented normalisation).
    for key, value in kwargs.items():
        if key == "n_socket" and value == 1:
            value = None
        assert decoded[key] == value, key
    for slot in range(get_n_run_slots(code)):
        slot_code = prepend_run_slot(slot, code)
        assert get_run_slot(slot_code) == slot
        assert encode_affinity(**decode_affinity(slot_code)) == slot_code
        assert get_n_run_slots(slot_code) == get_n_run_slots(code)


def test_code_examples_are_short_and_readable():
    assert encode_affinity(n_cpu_core=8, cpu_per_run=2) == "8cpu_2cpr"
    assert encode_affinity(n_cpu_core=8, cpu_per_run=2, hyperthread_offset=8) == "8cpu_2cpr_8hto"
    code = encode_affinity(n_cpu_core=16, n_gpu=4, contexts_per_gpu=2, n_socket=2)
    assert code == "16cpu_4gpu_2cxg_2skt"
    assert prepend_run_slot(3, code) == "3slt_16cpu_4gpu_2cxg_2skt"
    assert encode_affinity(n_cpu_core=4, set_affinity=False) == "4cpu_0saf"
    # Classic spellings are accepted: 0 meant "no hyperthreads", one socket is no socket.
    assert encode_affinity(n_cpu_core=4, hyperthread_offset=0, n_socket=1) == "4cpu"


# ---------------------------------------------------------------- invariants


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    kwargs=affinity_kwargs(),
    ids=st.sets(st.integers(0, 511), min_size=60, max_size=80),
)
def test_every_slot_layout_keeps_the_invariants(kwargs, ids):
    code = try_encode(kwargs)
    assume(code is not None)
    cpus = machine_cpus(ids, code)
    assume(cpus is not None)
    spec = decode_affinity(code)
    hto = spec["hyperthread_offset"]
    n_gpu = spec["n_gpu"]
    n_slots = get_n_run_slots(code)
    n_cpus_per_run, n_gpus_per_run = run_resources(code)
    seen_cpus, gpu_users = set(), {}
    for slot in range(n_slots):
        affinity = affinity_from_code(prepend_run_slot(slot, code), cpus, available_gpus=n_gpu)
        run_cpus = set(affinity_cpus(affinity))
        # No CPU is given to two slots, and every CPU is one the machine has.
        assert not run_cpus & seen_cpus
        assert run_cpus <= set(cpus)
        seen_cpus |= run_cpus
        assert len(run_cpus) <= n_cpus_per_run  # Less where the layout leaves cores idle.
        gpus = slot_gpus(affinity)
        assert len(gpus) * 1.0 / spec["contexts_per_gpu"] == n_gpus_per_run
        for gpu in gpus:
            gpu_users[gpu] = gpu_users.get(gpu, 0) + 1
        if hto:  # Each core comes with its hyperthread sibling.
            index = {cpu: i for i, cpu in enumerate(cpus)}
            for cpu in run_cpus:
                i = index[cpu]
                sibling = cpus[i + hto] if i < hto else cpus[i - hto]
                assert sibling in run_cpus
        check_parts(affinity, spec, run_cpus)
    # A GPU is shared by at most contexts_per_gpu runs; all GPUs are used.
    assert all(users <= spec["contexts_per_gpu"] for users in gpu_users.values())
    assert set(gpu_users) <= set(range(n_gpu))
    if n_gpu and n_gpu % parse_code(code)[1].gpus_per_run == 0:
        assert set(gpu_users) == set(range(n_gpu))


def check_parts(affinity, spec, run_cpus):
    hto, cpw = spec["hyperthread_offset"], spec["cpu_per_worker"]
    threads_per_core = 2 if hto else 1
    parts = parts_of(affinity)
    used_by_part = []
    for kind, part in parts:
        assert part["set_affinity"] == spec["set_affinity"]
        if kind == "optimizer":
            assert part["torch_threads"] == max(spec["cpu_reserved"], 1)
            assert len(part["cpus"]) == part["torch_threads"] * threads_per_core
            assert part["cuda_idx"] is not None or spec["n_gpu"] == 0
            used_by_part.append(set(part["cpus"]))
            continue
        master = set(part["master_cpus"])
        assert master <= run_cpus
        assert part["master_torch_threads"] * threads_per_core == len(master)
        assert part["worker_torch_threads"] == cpw
        assert part["alternating"] == spec["alternating"]
        workers = part["workers_cpus"]
        assert workers, "every sampler has at least one worker"
        flat = [c for w in workers for c in w]
        assert set(flat) <= master  # Workers stay within the run's CPUs.
        if spec["alternating"]:
            assert len(workers) % 2 == 0
            if not hto:  # Two groups of workers take turns on the same cores.
                assert workers[: len(workers) // 2] == workers[len(workers) // 2:]
        if not (spec["alternating"] and not hto):
            assert len(flat) == len(set(flat)), "no CPU serves two workers"
        per_worker = cpw * (2 if hto and not spec["alternating"] else 1)
        assert all(len(w) == per_worker for w in workers)
        used_by_part.append(master)
    for a, b in itertools.combinations(used_by_part, 2):
        assert not a & b, "replicas, optimizers and samplers never share a CPU"
    if spec["async_sample"]:
        optim_gpus = {p["cuda_idx"] for k, p in parts if k == "optimizer"}
        sample_gpus = {p["cuda_idx"] for k, p in parts if k == "sampler"} - {None}
        if spec["optim_sample_share_gpu"]:  # Every optimizer GPU samples (classic rlpyt).
            assert sample_gpus == optim_gpus
        else:
            assert len(sample_gpus) == spec["sample_gpu_per_run"]
        if not spec["optim_sample_share_gpu"]:
            assert not sample_gpus & optim_gpus
    elif spec["gpu_per_run"] > 1:
        assert isinstance(affinity, list) and len(affinity) == spec["gpu_per_run"]
        assert len({p["cuda_idx"] for p in affinity}) == spec["gpu_per_run"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(kwargs=affinity_kwargs())
def test_single_run_code_has_the_shape_of_one_slot(kwargs):
    code = try_encode(kwargs)
    assume(code is not None)
    spec = decode_affinity(code)
    n_index = parse_code(code)[1].n_cpu_index
    full = affinity_from_code(prepend_run_slot(0, code), range(n_index), spec["n_gpu"])
    one = single_run_code(code)
    assert get_n_run_slots(one) == 1
    n_cpus, n_gpus = run_resources(one)
    assert n_cpus == run_resources(code)[0]
    single = affinity_from_code(one, range(n_cpus), int(n_gpus))

    def shape(affinity):
        return [
            (kind, len(p.get("workers_cpus", ())), p.get("master_torch_threads"),
             p.get("torch_threads"), p.get("worker_torch_threads"), p["cuda_idx"] is None)
            for kind, p in parts_of(affinity)
        ]

    assert shape(single) == shape(full)
    assert set(affinity_cpus(single)) <= set(range(n_cpus))  # All, unless cores stay idle.
    assert len(affinity_cpus(single)) == len(affinity_cpus(full))


# ---------------------------------------------------------------- concrete layouts


def test_cpu_layout_with_hyperthreads_and_reserved_master_core():
    code = encode_affinity(n_cpu_core=4, cpu_per_run=2, cpu_reserved=1, hyperthread_offset=4)
    cpus = [10, 11, 12, 13, 20, 21, 22, 23]  # e.g. a cgroup: ids need not start at 0
    slot1 = affinity_from_code(prepend_run_slot(1, code), cpus)
    assert slot1 == dict(
        all_cpus=(12, 13, 22, 23),
        cuda_idx=None,
        master_cpus=(12, 13, 22, 23),
        workers_cpus=((13, 23),),
        master_torch_threads=2,
        worker_torch_threads=1,
        alternating=False,
        set_affinity=True,
    )
    assert slot1.master_cpus == (12, 13, 22, 23)  # AttrDict access, as classic code uses


def test_alternating_workers_use_the_siblings_as_second_group():
    affinity = make_affinity(
        run_slot=0, n_cpu_core=2, cpu_per_run=2, hyperthread_offset=2, alternating=True,
    ) if len(available_cpus()) >= 4 else affinity_from_code(
        encode_affinity(n_cpu_core=2, cpu_per_run=2, hyperthread_offset=2, alternating=True),
        [0, 1, 2, 3],
    )
    assert affinity["workers_cpus"] == ((0,), (1,), (2,), (3,))
    no_ht = affinity_from_code(encode_affinity(n_cpu_core=2, cpu_per_run=2, alternating=True),
                               [0, 1])
    assert no_ht["workers_cpus"] == ((0,), (1,), (0,), (1,))


def test_gpu_slots_spread_over_gpus_first():
    code = encode_affinity(n_cpu_core=8, n_gpu=2, contexts_per_gpu=2)
    slots = [affinity_from_code(prepend_run_slot(s, code), range(8), 2) for s in range(4)]
    assert [a["cuda_idx"] for a in slots] == [0, 1, 0, 1]
    # A GPU's runs get the cores next to it (GPU 0: cores 0-3, GPU 1: cores 4-7).
    assert [a["master_cpus"] for a in slots] == [(0, 1), (4, 5), (2, 3), (6, 7)]


def test_sync_multi_gpu_gives_one_affinity_per_replica():
    code = encode_affinity(n_cpu_core=8, n_gpu=4, gpu_per_run=2)
    assert get_n_run_slots(code) == 2
    replicas = affinity_from_code(prepend_run_slot(1, code), range(8), 4)
    assert [r["cuda_idx"] for r in replicas] == [2, 3]
    assert [r["master_cpus"] for r in replicas] == [(4, 5), (6, 7)]


def test_async_layout_splits_optimizer_and_sampler():
    code = encode_affinity(
        n_cpu_core=8, n_gpu=2, async_sample=True, sample_gpu_per_run=1, cpu_reserved=1,
    )
    affinity = affinity_from_code(code, range(8), 2)
    assert affinity.optimizer == [dict(cuda_idx=0, cpus=(0,), torch_threads=1,
                                       set_affinity=True)]
    (sampler,) = affinity.sampler
    assert sampler["cuda_idx"] == 1
    assert sampler["workers_cpus"] == tuple((c,) for c in range(1, 8))
    cpu_sampler = affinity_from_code(encode_affinity(n_cpu_core=4, cpu_per_run=4,
                                                     async_sample=True), range(4))
    assert cpu_sampler.optimizer[0]["cuda_idx"] is None
    assert cpu_sampler.sampler["workers_cpus"] == ((1,), (2,), (3,))


def test_affinity_cpus_accepts_the_short_dict_form():
    assert affinity_cpus(dict(cuda_idx=None, workers_cpus=[3, 1, 2])) == (1, 2, 3)


# ---------------------------------------------------------------- errors


def test_request_bigger_than_the_machine_says_what_fits():
    with pytest.raises(ValueError) as info:
        affinity_from_code(encode_affinity(n_cpu_core=64), available_cpus=[0, 1])
    message = str(info.value)
    assert "n_cpu_core=64 but only 2 CPUs are available to this process: [0, 1]" in message
    assert "n_cpu_core <= 2" in message
    with pytest.raises(ValueError, match=r"hyperthread_offset=2 .* only 2 CPUs"):
        affinity_from_code(encode_affinity(n_cpu_core=2, hyperthread_offset=2), [0, 1])
    with pytest.raises(ValueError, match=r"n_gpu=2 but only 1 CUDA devices .* n_gpu <= 1"):
        affinity_from_code(encode_affinity(n_cpu_core=2, n_gpu=2), [0, 1], available_gpus=1)


def test_make_affinity_checks_this_machine():
    n = len(available_cpus())
    with pytest.raises(ValueError, match=f"only {n} CPUs are available to this process"):
        make_affinity(n_cpu_core=n + 1)
    affinity = make_affinity(n_cpu_core=n, cpu_per_run=n)
    assert affinity_cpus(affinity) == available_cpus()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_cpu_core=10, cpu_per_run=4), r"cpu_per_run=4 .* fit: \[1, 2, 5, 10\]"),
        (dict(n_cpu_core=0), r"n_cpu_core=0 is invalid"),
        (dict(n_cpu_core=4, hyperthread_offset=2), r"hyperthread_offset=2 is invalid"),
        (dict(n_cpu_core=6, n_gpu=4), r"n_cpu_core=6 does not divide evenly .* multiple of 4"),
        (dict(n_cpu_core=6, n_gpu=1, gpu_per_run=2), r"n_gpu=1 is fewer than gpu_per_run=2"),
        (dict(n_cpu_core=4, n_gpu=2, gpu_per_run=3, async_sample=True), r"n_gpu=2 is fewer"),
        (dict(n_cpu_core=4, n_gpu=2, contexts_per_gpu=2, async_sample=True),
         r"contexts_per_gpu=2 with async_sample=True"),
        (dict(n_cpu_core=4, cpu_per_run=2, cpu_per_worker=3), r"cpu_per_worker=3 does not fit"),
        (dict(n_cpu_core=4, cpu_per_run=2, cpu_reserved=2), r"cpu_per_worker=1 does not fit"),
        (dict(n_cpu_core=4, gpu_per_run=2, async_sample=True), r"gpu_per_run=2 with n_gpu=0"),
        (dict(n_cpu_core=4, gpu_per_run=3), r"gpu_per_run=3 CPU replicas .* fit: \[\]"),
        (dict(n_cpu_core=4, n_gpu=1, sample_gpu_per_run=1), r"sample_gpu_per_run=1 needs async"),
        (dict(n_cpu_core=4, n_gpu=1, cpu_per_run=3), r"cpu_per_run=3 conflicts .* 4 cores"),
        (dict(n_cpu_core=6, cpu_per_run=2, n_socket=2), r"3 runs do not spread evenly"),
        # Classic rlpyt would give core 2 to the second optimizer and the sampler.
        (dict(n_cpu_core=4, n_gpu=2, gpu_per_run=2, n_socket=2, async_sample=True),
         r"would give core 2 to run slot 0's optimizer 1 and run slot 0's sampler 2"),
        (dict(n_cpu_core=8, n_socket=2, hyperthread_offset=9), r"n_socket=2 must divide hyp"),
        (dict(n_cpu_core=4, n_socket=3), r"n_socket=3 must divide n_cpu_core=4"),
        (dict(n_cpu_core=4, alternating="yes"), r"alternating='yes' is invalid"),
        (dict(n_cpu_core=2.5), r"n_cpu_core=2.5 is invalid: it must be an integer"),
        (dict(n_cpu_core=4, run_slot=4), r"run_slot=4 is invalid: .* 4 run slots \(0..3\)"),
    ],
)
def test_impossible_requests_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        encode_affinity(**kwargs)


@pytest.mark.parametrize(
    "code, match",
    [
        ("4cpx", r"invalid part '4cpx'"),
        ("cpu", r"invalid part 'cpu'"),
        ("4cpu_4cpu", r"repeats the tag 'cpu'"),
        ("4cpu_3cpr", r"affinity code '4cpu_3cpr': cpu_per_run=3 does not divide"),
        ("5slt_4cpu", r"run_slot=5 is invalid"),
        ("", r"invalid"),
    ],
)
def test_bad_codes_are_rejected_with_the_code_named(code, match):
    with pytest.raises(ValueError, match=match):
        get_n_run_slots(code)


def test_prepend_run_slot_refuses_a_code_with_a_slot():
    with pytest.raises(ValueError, match="already names run slot 0"):
        prepend_run_slot(1, "0slt_4cpu")


# ---------------------------------------------------------------- machine detection


def test_layout_cpus_prefers_the_launchers_cpu_list(monkeypatch):
    monkeypatch.delenv(LAUNCHER_CPUS_ENV, raising=False)
    assert layout_cpus() == available_cpus()
    monkeypatch.setenv(LAUNCHER_CPUS_ENV, "4,5,6,7")
    assert layout_cpus() == (4, 5, 6, 7)
    affinity = affinity_from_code("1slt_4cpu_2cpr")  # Resolved on the launcher's list.
    assert affinity["master_cpus"] == (6, 7)
    monkeypatch.setenv(LAUNCHER_CPUS_ENV, "4,x")
    with pytest.raises(ValueError, match="RLPYT_LAUNCHER_CPUS='4,x' is invalid"):
        layout_cpus()


def test_detect_hyperthread_offset_reads_sibling_lists(monkeypatch):
    pairs = {0: {0, 4}, 1: {1, 5}, 2: {2, 6}, 3: {3, 7}}
    siblings = {c: s for c, s in pairs.items()} | {c + 4: s for c, s in pairs.items()}
    monkeypatch.setattr(cpus_module, "_thread_siblings", lambda cpu: siblings.get(cpu))
    assert detect_hyperthread_offset(range(8)) == 4
    assert detect_hyperthread_offset([0, 1, 4, 5]) == 2  # a cgroup holding 2 cores + siblings
    assert detect_hyperthread_offset([0, 1, 2, 3]) is None  # no siblings inside the set
    assert detect_hyperthread_offset([0, 4, 1]) is None  # odd count
    monkeypatch.setattr(cpus_module, "_thread_siblings", lambda cpu: None)  # no sysfs (macOS)
    assert detect_hyperthread_offset(range(8)) is None


def test_quick_affinity_code_fills_this_machine(monkeypatch):
    n = len(available_cpus())
    hto = detect_hyperthread_offset()
    cores = hto or n
    code = quick_affinity_code(n_parallel=cores, use_gpu=False)
    assert get_n_run_slots(code) == cores
    assert affinity_cpus(affinity_from_code(prepend_run_slot(0, code))) != ()
    assert get_n_run_slots(quick_affinity_code(use_gpu=False)) == 1
    with pytest.raises(ValueError, match=rf"n_parallel={cores + 1} runs do not fit"):
        quick_affinity_code(n_parallel=cores + 1, use_gpu=False)
    with pytest.raises(ValueError, match="n_parallel=0 is invalid"):
        quick_affinity_code(n_parallel=0, use_gpu=False)


def test_cpu_replicas_of_a_sync_run():
    """n_gpu=0 with gpu_per_run=N: N CPU replicas (SyncRl ranks) of cpu_per_run cores each."""
    replicas = make_affinity(n_cpu_core=2, n_gpu=0, gpu_per_run=2, set_affinity=False)
    assert isinstance(replicas, list) and len(replicas) == 2
    assert [r["cuda_idx"] for r in replicas] == [None, None]
    first, second = (set(r["master_cpus"]) for r in replicas)
    assert len(first) == len(second) == 1 and not first & second
    assert get_n_run_slots(encode_affinity(n_cpu_core=4, gpu_per_run=2)) == 2


# ---------------------------------------------------------------- classic rlpyt's numbers
# Expected values below were produced by classic rlpyt's own affinity module (run
# standalone) on the same arguments, and are written out literally: the CPU and GPU
# ids of every slot are part of the API contract.


def layout(code):
    """Per slot: (all_cpus, [(role, cuda_idx, cpus, workers_cpus)]), on CPU ids 0..n-1."""
    spec = parse_code(code)[1]
    slots = []
    for slot in range(spec.n_run_slots):
        affinity = affinity_from_code(prepend_run_slot(slot, code), range(64), spec.n_gpu)
        parts = [(kind, p["cuda_idx"], p.get("cpus", p.get("master_cpus")),
                  p.get("workers_cpus")) for kind, p in parts_of(affinity)]
        if isinstance(affinity, list):
            all_cpus = tuple(c for p in affinity for c in p["all_cpus"])
        else:
            all_cpus = affinity["all_cpus"]
        slots.append((all_cpus, parts))
    return slots


def ht(cores, hto):
    """Cores followed by their hyperthread siblings (classic rlpyt's CPU order)."""
    return tuple(cores) + tuple(c + hto for c in cores)


def test_two_socket_cpu_layout_skips_the_unused_cores_of_each_socket():
    # 2 sockets of 10 cores (siblings at +20), 16 cores used: 0-7 and 10-17.
    code = encode_affinity(n_cpu_core=16, cpu_per_run=4, hyperthread_offset=20, n_socket=2)
    starts = [0, 4, 10, 14]
    expected = []
    for s in starts:
        cpus = ht(range(s, s + 4), 20)
        expected.append((cpus, [("sampler", None, cpus,
                                 tuple((c, c + 20) for c in range(s, s + 4)))]))
    assert layout(code) == expected
    assert layout(code)[2][0] == (10, 11, 12, 13, 30, 31, 32, 33)


def test_two_socket_gpu_layouts():
    one = layout(encode_affinity(n_cpu_core=16, n_gpu=4, hyperthread_offset=20, n_socket=2,
                                 cpu_reserved=1))
    assert [(parts[0][1], parts[0][2], parts[0][3]) for _, parts in one] == [
        (gpu, ht(range(s, s + 4), 20), tuple((c, c + 20) for c in range(s + 1, s + 4)))
        for gpu, s in [(0, 0), (1, 4), (2, 10), (3, 14)]
    ]
    multi = layout(encode_affinity(n_cpu_core=16, n_gpu=4, gpu_per_run=2, hyperthread_offset=20,
                                   n_socket=2))
    assert [[(p[1], p[2]) for p in parts] for _, parts in multi] == [
        [(0, ht(range(0, 4), 20)), (1, ht(range(4, 8), 20))],
        [(2, ht(range(10, 14), 20)), (3, ht(range(14, 18), 20))],
    ]
    contexts = layout(encode_affinity(n_cpu_core=16, n_gpu=2, contexts_per_gpu=2,
                                      hyperthread_offset=20, n_socket=2))
    assert [(parts[0][1], parts[0][2]) for _, parts in contexts] == [
        (0, ht(range(0, 4), 20)), (1, ht(range(10, 14), 20)), (0, ht(range(4, 8), 20)),
        (1, ht(range(14, 18), 20)),
    ]


def test_two_socket_async_layouts():
    code = encode_affinity(n_cpu_core=16, n_gpu=4, hyperthread_offset=20, n_socket=2,
                           async_sample=True, sample_gpu_per_run=1)
    assert layout(code) == [
        (ht([s], 20) + ht(range(s + 1, s + 8), 20),
         [("optimizer", 2 * r, ht([s], 20), None),
          ("sampler", 2 * r + 1, ht(range(s + 1, s + 8), 20),
           tuple((c, c + 20) for c in range(s + 1, s + 8)))])
        for r, s in [(0, 0), (1, 10)]
    ]
    # One run over both sockets: an optimizer GPU in each, a CPU sampler on the rest.
    code = encode_affinity(n_cpu_core=16, n_gpu=2, gpu_per_run=2, hyperthread_offset=20,
                           n_socket=2, async_sample=True)
    sampler = (2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 16, 17, 18)
    assert layout(code) == [(
        (0, 20, 10, 30) + ht(sampler, 20),
        [("optimizer", 0, (0, 20), None), ("optimizer", 1, (10, 30), None),
         ("sampler", None, ht(sampler, 20), tuple((c, c + 20) for c in sampler))],
    )]


def test_async_optimizers_sit_together_at_the_start_of_the_run():
    code = encode_affinity(n_cpu_core=12, n_gpu=4, gpu_per_run=2, async_sample=True)
    assert layout(code) == [
        (tuple(range(s, s + 6)),
         [("optimizer", g, (s,), None), ("optimizer", g + 1, (s + 1,), None),
          ("sampler", None, tuple(range(s + 2, s + 6)), tuple((c,) for c in range(s + 2, s + 6)))])
        for g, s in [(0, 0), (2, 6)]
    ]
    code = encode_affinity(n_cpu_core=8, n_gpu=4, gpu_per_run=2, sample_gpu_per_run=2,
                           cpu_reserved=1, async_sample=True)
    assert layout(code) == [(tuple(range(8)), [
        ("optimizer", 0, (0,), None), ("optimizer", 1, (1,), None),
        ("sampler", 2, (2, 3, 4), ((2,), (3,), (4,))),
        ("sampler", 3, (5, 6, 7), ((5,), (6,), (7,))),
    ])]


def test_wasteful_async_layouts_are_accepted_with_a_warning():
    with pytest.warns(UserWarning, match="n_gpu=4 is not a multiple of the 3 GPUs"):
        code = encode_affinity(n_cpu_core=12, n_gpu=4, gpu_per_run=2, sample_gpu_per_run=1,
                               async_sample=True)
    with pytest.warns(UserWarning):
        assert layout(code) == [(tuple(range(12)), [
            ("optimizer", 0, (0,), None), ("optimizer", 1, (1,), None),
            ("sampler", 2, tuple(range(2, 12)), tuple((c,) for c in range(2, 12))),
        ])]
    with pytest.warns(UserWarning, match="n_cpu_core=9 does not split evenly .* 1 stay unused"):
        code = encode_affinity(n_cpu_core=9, n_gpu=2, async_sample=True)
    with pytest.warns(UserWarning):
        assert layout(code) == [
            (tuple(range(s, s + 4)), [("optimizer", g, (s,), None),
                                      ("sampler", None, tuple(range(s + 1, s + 4)),
                                       tuple((c,) for c in range(s + 1, s + 4)))])
            for g, s in [(0, 0), (1, 4)]
        ]


def test_sync_multi_gpu_leaving_a_gpu_idle_warns():
    with pytest.warns(UserWarning, match="n_gpu=3 is not a multiple of gpu_per_run=2"):
        code = encode_affinity(n_cpu_core=6, n_gpu=3, gpu_per_run=2)
    with pytest.warns(UserWarning):
        assert layout(code) == [((0, 1, 2, 3), [("sampler", 0, (0, 1), ((0,), (1,))),
                                                ("sampler", 1, (2, 3), ((2,), (3,)))])]


def test_optimizer_gpus_also_sample_when_they_share():
    code = encode_affinity(n_cpu_core=8, n_gpu=2, gpu_per_run=2, async_sample=True,
                           optim_sample_share_gpu=True)
    assert layout(code) == [(tuple(range(8)), [
        ("optimizer", 0, (0,), None), ("optimizer", 1, (1,), None),
        ("sampler", 0, (2, 3, 4), ((2,), (3,), (4,))),
        ("sampler", 1, (5, 6, 7), ((5,), (6,), (7,))),
    ])]


def test_quick_affinity_code_takes_contexts_per_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr("rlpyt.utils.launching.affinity.available_cpus", lambda: tuple(range(8)))
    monkeypatch.setattr("rlpyt.utils.launching.affinity.detect_hyperthread_offset",
                        lambda cpus: None)
    code = quick_affinity_code(contexts_per_gpu=2)
    assert code == "8cpu_2gpu_2cxg"
    assert get_n_run_slots(code) == 4
    with pytest.raises(ValueError, match="contexts_per_gpu=0 is invalid"):
        quick_affinity_code(contexts_per_gpu=0)


# ---------------------------------------------------------------- module structure

AFFINITY_MODULES = ("affinity", "affinity_spec", "affinity_layout", "affinity_sizes")


def _imported_modules(name: str) -> set[str]:
    """Every rlpyt module that ``rlpyt.utils.launching.<name>`` imports, at any level
    (module top, function bodies, ``TYPE_CHECKING`` blocks)."""
    import ast
    import importlib

    path = importlib.import_module(f"rlpyt.utils.launching.{name}").__file__
    with open(path) as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.startswith("rlpyt.")}


def test_affinity_modules_import_downwards_only():
    """No import circle among the affinity modules, hidden in a function or not: each
    imports only those after it in AFFINITY_MODULES (the spec validates by laying every
    slot out, and the layout reads the sizes the spec is made of)."""
    for i, name in enumerate(AFFINITY_MODULES):
        above = {f"rlpyt.utils.launching.{m}" for m in AFFINITY_MODULES[:i + 1]}
        assert not _imported_modules(name) & above, name
    from rlpyt.utils.launching.affinity_layout import slot_parts
    from rlpyt.utils.launching.affinity_spec import AffinitySpec

    spec = parse_code("8cpu_2cpr")[1]
    assert isinstance(spec, AffinitySpec) and spec.n_run_slots == 4
    assert [part.cores for part in slot_parts(spec, 1)] == [(2, 3)]
