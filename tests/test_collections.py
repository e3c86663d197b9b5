"""rlpyt.utils.collections: namedarraytuple indexing, schemas, AttrDict and pickling."""

import multiprocessing as mp
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rlpyt.utils.collections import (
    AttrDict,
    NamedArrayTuple,
    NamedArrayTupleSchema,
    NamedTuple,
    NamedTupleSchema,
    is_namedarraytuple,
    is_namedarraytuple_class,
    is_namedtuple,
    is_namedtuple_class,
    namedarraytuple,
    namedarraytuple_like,
    namedtuple,
)

Inner = namedarraytuple("Inner", ["x", "y"])
Outer = namedarraytuple("Outer", ["a", "b", "c", "inner"])


def make_outer(lead, fill=None):
    """An ``Outer`` with leading dims ``lead``: fields of different trailing shapes and dtypes."""
    rng = np.random.default_rng(0)
    n = int(np.prod(lead, dtype=int))
    a = rng.normal(size=(n, 3)).reshape(lead + (3,)).astype(np.float32)
    b = np.arange(n, dtype=np.int64).reshape(lead)
    x = rng.integers(0, 255, size=(n, 2, 2)).reshape(lead + (2, 2)).astype(np.uint8)
    y = (np.arange(n) % 2 == 0).reshape(lead)
    return Outer(a=a, b=b, c=None, inner=Inner(x=x, y=y))


def leaves(nat):
    """Non-None leaf arrays of a nested namedarraytuple, depth first."""
    for v in nat:
        if v is None:
            continue
        if is_namedtuple(v):
            yield from leaves(v)
        else:
            yield v


lead_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


@st.composite
def shape_and_index(draw):
    lead = draw(lead_shapes)
    # No Ellipsis: a leading "..." would address each field's own trailing dims.
    return lead, draw(hnp.basic_indices(lead, allow_ellipsis=False))


# ---------------------------------------------------------------- indexing reads


@settings(max_examples=60, deadline=None)
@given(shape_and_index())
def test_getitem_indexes_every_field_nested_and_skips_none(case):
    lead, idx = case
    nat = make_outer(lead)
    part = nat[idx]
    assert type(part) is Outer and type(part.inner) is Inner
    assert part.c is None
    for got, full in zip(leaves(part), leaves(nat)):
        np.testing.assert_array_equal(got, full[idx])
        if np.size(got) and np.ndim(got):  # basic indexing gives views: writes go through
            assert np.shares_memory(got, full)


@settings(max_examples=60, deadline=None)
@given(shape_and_index(), st.data())
def test_setitem_namedtuple_value_writes_every_field(case, data):
    lead, idx = case
    nat = make_outer(lead)
    before = [leaf.copy() for leaf in leaves(nat)]
    target = nat[idx]
    # A value with the same (nested) fields: fresh arrays of the target's shapes.
    new = Outer(
        a=np.full(np.shape(target.a), 7.5, np.float32),
        b=np.full(np.shape(target.b), -3, np.int64),
        c=None,
        inner=Inner(x=np.full(np.shape(target.inner.x), 9, np.uint8),
                    y=np.ones(np.shape(target.inner.y), bool)),
    )
    nat[idx] = new
    for leaf, old, value in zip(leaves(nat), before, leaves(new)):
        expected = old.copy()
        expected[idx] = value
        np.testing.assert_array_equal(leaf, expected)


@settings(max_examples=60, deadline=None)
@given(shape_and_index(), st.integers(0, 1))
def test_setitem_scalar_broadcasts_into_every_field(case, scalar):
    lead, idx = case
    nat = make_outer(lead)
    before = [leaf.copy() for leaf in leaves(nat)]
    nat[idx] = scalar
    for leaf, old in zip(leaves(nat), before):
        expected = old.copy()
        expected[idx] = scalar
        np.testing.assert_array_equal(leaf, expected)


def test_setitem_none_entries_of_value_are_skipped():
    nat = make_outer((4,))
    b_before = nat.b.copy()
    nat[1] = Outer(a=np.ones(3, np.float32), b=None, c=None, inner=Inner(x=5, y=None))
    np.testing.assert_array_equal(nat.a[1], 1)
    np.testing.assert_array_equal(nat.b, b_before)
    np.testing.assert_array_equal(nat.inner.x[1], 5)


def test_setitem_plain_tuple_by_position():
    Pair = namedarraytuple("Pair", ["p", "q"])
    pair = Pair(np.zeros(3), np.zeros((3, 2)))
    pair[0] = (1.0, 2.0)
    assert pair.p[0] == 1.0 and (pair.q[0] == 2.0).all()


def test_torch_fields_index_and_write():
    import torch

    Pair = namedarraytuple("Pair", ["p", "q"])
    pair = Pair(torch.zeros(4, 3), torch.arange(4))
    part = pair[1:3]
    assert part.p.shape == (2, 3) and part.q.tolist() == [1, 2]
    pair[0] = 5
    assert (pair.p[0] == 5).all() and pair.q[0] == 5
    pair[torch.tensor([2, 3])] = Pair(torch.ones(2, 3), torch.tensor([7, 8]))
    assert pair.q.tolist() == [5, 1, 7, 8]


# ---------------------------------------------------------------- errors


def test_getitem_error_names_the_failing_field():
    Pair = namedarraytuple("Pair", ["wide", "narrow"])
    pair = Pair(np.zeros((5, 2)), np.zeros(2))
    with pytest.raises(IndexError, match="'narrow'"):
        pair[4]


def test_setitem_error_names_the_failing_field_even_nested():
    nat = make_outer((3,))
    bad = Outer(a=np.zeros(3), b=0, c=None, inner=Inner(x=np.zeros((5, 5)), y=0))
    with pytest.raises(ValueError, match=r"'inner'.*'x'"):
        nat[0] = bad


def test_setitem_rejects_wrong_fields_and_lengths():
    nat = make_outer((3,))
    Other = namedtuple("Other", ["a", "b", "zz", "inner"])
    with pytest.raises(ValueError, match="fields"):
        nat[0] = Other(0, 0, 0, 0)
    with pytest.raises(ValueError, match="length 2"):
        nat[0] = (1, 2)


@pytest.mark.parametrize(
    "fields, match",
    [
        (["ok", "class"], "identifier"),
        (["ok", "_hidden"], "_hidden"),
        (["get"], "reserved"),
        (["items"], "reserved"),
        (["a", "a"], "duplicate"),
        (["a b"], "identifier"),
    ],
)
def test_bad_field_names_are_rejected(fields, match):
    with pytest.raises(ValueError, match=match):
        namedarraytuple("Bad", fields)


def test_field_string_forms():
    assert namedarraytuple("S", "p, q r")._fields == ("p", "q", "r")


# ---------------------------------------------------------------- tuple behaviour


def test_get_items_and_contains():
    nat = make_outer((2,))
    assert nat.get(1) is nat.b  # positional field access
    assert nat.get(2) is None
    assert [k for k, _ in nat.items()] == list(Outer._fields)
    assert all(v is getattr(nat, k) for k, v in nat.items())
    assert "inner" in nat and "x" not in nat and "a" in nat
    a, b, c, inner = nat  # still unpacks like a namedtuple
    assert a is nat.a and inner is nat.inner
    assert nat._asdict()["b"] is nat.b


def test_class_checks():
    Plain = namedtuple("Plain", ["u"])
    nat = make_outer((2,))
    assert is_namedtuple(nat) and is_namedarraytuple(nat)
    assert is_namedtuple(Plain(1)) and not is_namedarraytuple(Plain(1))
    assert not is_namedtuple((1, 2)) and not is_namedarraytuple([1])
    assert is_namedtuple_class(Outer) and is_namedarraytuple_class(Outer)
    assert is_namedtuple_class(Plain) and not is_namedarraytuple_class(Plain)
    assert not is_namedtuple_class(nat) and not is_namedarraytuple_class(nat)
    assert not is_namedtuple_class(tuple)


def test_namedarraytuple_like():
    Plain = namedtuple("Plain", ["u", "v"])
    cls = namedarraytuple_like(Plain(1, 2))
    assert is_namedarraytuple_class(cls) and cls.__name__ == "Plain" and cls._fields == ("u", "v")
    assert namedarraytuple_like(Plain) is cls
    assert namedarraytuple_like(Outer) is Outer
    assert namedarraytuple_like(make_outer((1,))) is Outer
    assert namedarraytuple_like(Plain, classname_suffix=True).__name__ == "Plain_nat"
    schema = NamedTupleSchema("Sch", ["k"])
    assert namedarraytuple_like(schema)._fields == ("k",)
    with pytest.raises(TypeError, match="dict"):
        namedarraytuple_like({"u": 1})


def test_same_name_and_fields_give_the_same_class():
    assert namedarraytuple("Inner", ["x", "y"]) is Inner
    assert namedtuple("P", ["q"]) is namedtuple("P", ["q"])
    nat_cls, nt_cls = namedarraytuple("Both", ["m"], return_namedtuple_cls=True)
    assert is_namedarraytuple_class(nat_cls) and not is_namedarraytuple_class(nt_cls)
    assert nt_cls._fields == ("m",)


# ---------------------------------------------------------------- AttrDict and schemas


def test_attrdict():
    d = AttrDict(a=1)
    d.b = 2
    d["c"] = 3
    assert d == {"a": 1, "b": 2, "c": 3} and d.c == 3 and d["b"] == 2
    e = d.copy()
    e.a = 10
    assert d.a == 1 and type(e) is AttrDict
    back = pickle.loads(pickle.dumps(d))
    assert back == d and back.b == 2 and type(back) is AttrDict
    back.z = 5
    assert back["z"] == 5
    with pytest.raises(AttributeError):
        _ = d.missing


def test_schemas_build_instances_and_pickle():
    nts = NamedTupleSchema("Info", ["p", "q"])
    nats = NamedArrayTupleSchema("Info", ["p", "q"])
    assert nts(1, 2).q == 2 and not is_namedarraytuple(nts(1, 2))
    inst = nats(np.arange(3), np.arange(3) * 2)
    assert is_namedarraytuple(inst) and inst[1].q == 2
    assert nts._make([3, 4]) == (3, 4)
    assert nts != nats and nts == NamedTupleSchema("Info", "p q")
    assert hash(nts) == hash(NamedTupleSchema("Info", ["p", "q"]))
    for schema in (nts, nats):
        back = pickle.loads(pickle.dumps(schema))
        assert back == schema and back.cls is schema.cls
    assert NamedTuple("T", ["u"], [1]).u == 1
    assert is_namedarraytuple(NamedArrayTuple("T", ["u"], [np.zeros(2)]))
    assert "Info" in repr(nats)


# ---------------------------------------------------------------- pickling


def make_runtime_instances():
    """Instances of classes created here, at run time (no module-level name to import)."""
    Leaf = namedarraytuple("RuntimeLeaf", ["m", "n"])
    Root = namedarraytuple("RuntimeRoot", ["leaf", "scalar", "empty"])
    Info = namedtuple("RuntimeInfo", ["flag", "count"])
    WithDefault = namedtuple("RuntimeDefault", ["r", "s"], defaults=[5])
    Suffixed = namedarraytuple("RuntimeSfx", ["w"], classname_suffix=True)
    root = Root(leaf=Leaf(np.arange(6.0).reshape(3, 2), np.array([1, 2, 3])),
                scalar=np.zeros(3, np.float32), empty=None)
    return root, Info(True, 3), WithDefault(1), Suffixed(np.ones(2)), AttrDict(k=[1, 2])


def check_runtime_instances(objs):
    root, info, with_default, suffixed, attrs = objs
    assert is_namedarraytuple(root) and type(root).__name__ == "RuntimeRoot"
    assert is_namedarraytuple(root.leaf) and root.leaf._fields == ("m", "n")
    np.testing.assert_array_equal(root.leaf.m, np.arange(6.0).reshape(3, 2))
    assert root.empty is None and root[1].leaf.n == 2  # indexing still works
    assert is_namedtuple(info) and not is_namedarraytuple(info) and info.count == 3
    assert with_default == (1, 5) and type(with_default)._fields == ("r", "s")
    assert type(with_default)(2) == (2, 5)  # defaults survive the trip
    assert type(suffixed).__name__ == "RuntimeSfx_nat" and is_namedarraytuple(suffixed)
    assert attrs.k == [1, 2]


def test_pickle_round_trip_keeps_classes():
    objs = make_runtime_instances()
    back = pickle.loads(pickle.dumps(objs))
    check_runtime_instances(back)
    for original, copy in zip(objs, back):
        assert type(copy) is type(original)


def _echo_child(inbox, outbox):
    """Child process: receive, check, index, and send back."""
    objs = inbox.get(timeout=60)
    try:
        check_runtime_instances(objs)
        root = objs[0]
        outbox.put(("ok", objs, root[2], type(root).__name__))
    except Exception as e:  # report to the parent, which fails the test
        outbox.put(("error", repr(e), None, None))


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_runtime_classes_cross_process_boundaries(method):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"{method} not available here")
    ctx = mp.get_context(method)
    inbox, outbox = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_echo_child, args=(inbox, outbox))
    proc.start()
    try:
        inbox.put(make_runtime_instances())
        status, objs, row, name = outbox.get(timeout=120)
    finally:
        proc.join(timeout=60)
        if proc.is_alive():
            proc.kill()
    assert status == "ok", objs
    assert proc.exitcode == 0
    check_runtime_instances(objs)
    assert name == "RuntimeRoot"
    assert is_namedarraytuple(row) and row.leaf.n == 3 and row.empty is None
