"""Model building blocks, PG models and parameter utilities."""

import gc
import math
import tempfile
import weakref

import hypothesis.strategies as st
import numpy as np
import pytest
import torch
import torch.multiprocessing as tmp
from hypothesis import given, settings

from rlpyt.models.conv2d import Conv2dHeadModel, Conv2dModel
from rlpyt.models.mlp import MlpModel
from rlpyt.models.pg.atari_ff_model import AtariFfModel
from rlpyt.models.pg.atari_lstm_model import AtariLstmModel
from rlpyt.models.pg.mlp import (
    CategoricalPgLstmModel,
    CategoricalPgMlpModel,
    GaussianPgLstmModel,
    GaussianPgMlpModel,
)
from rlpyt.models.pg.mujoco_ff_model import MujocoFfModel
from rlpyt.models.pg.mujoco_lstm_model import MujocoLstmModel
from rlpyt.models.rnn import RnnState
from rlpyt.models.running_mean_std import RunningMeanStdModel
from rlpyt.models.utils import (
    scale_grad,
    set_train_mode,
    strip_ddp_state_dict,
    update_state_dict,
)

FAST = settings(max_examples=25, deadline=None)

# ---------------------------------------------------------------- MLP and conv


def test_mlp_layers_and_output_size():
    mlp = MlpModel(5, [8, 6], output_size=3, nonlinearity=torch.nn.Tanh)
    kinds = [type(m) for m in mlp.model]
    assert kinds == [
        torch.nn.Linear,
        torch.nn.Tanh,
        torch.nn.Linear,
        torch.nn.Tanh,
        torch.nn.Linear,
    ]
    assert mlp.output_size == 3
    assert mlp(torch.randn(2, 4, 5)).shape == (2, 4, 3)
    assert MlpModel(5, 7).output_size == 7
    assert MlpModel(5, None, 2).output_size == 2
    x = torch.randn(3, 5)
    assert torch.equal(MlpModel(5, None)(x), x)


def test_mlp_forward_is_its_sequential_and_runs_layer_hooks():
    """The direct per-layer forward computes exactly what the Sequential does, gradients
    included, and a layer with hooks still goes through nn.Module.__call__."""
    torch.manual_seed(0)
    mlp = MlpModel(5, [8, 6], output_size=3, nonlinearity=torch.nn.Tanh)
    x = torch.randn(4, 5)
    out = mlp(x)
    assert torch.equal(out, mlp.model(x))
    out.sum().backward()
    direct = [p.grad.clone() for p in mlp.parameters()]
    mlp.zero_grad()
    mlp.model(x).sum().backward()
    assert all(torch.equal(a, p.grad) for a, p in zip(direct, mlp.parameters()))
    seen = []
    mlp.model[1].register_forward_hook(lambda module, args, output: seen.append(output))
    mlp.model[2].register_forward_pre_hook(lambda module, args: (args[0] * 0,))
    out = mlp(x)
    assert len(seen) == 1 and seen[0].shape == (4, 8)
    expected = mlp.model[4](mlp.model[3](mlp.model[2].bias.expand(4, 6)))
    torch.testing.assert_close(out, expected)  # the pre-hook zeroed layer 2's input


@pytest.mark.parametrize("nonlinearity", [torch.nn.Tanh, torch.nn.ReLU, torch.nn.Sigmoid,
                                          torch.nn.ELU])
def test_mlp_without_autograd_runs_activations_in_place_with_the_same_values(nonlinearity):
    """Outside autograd a Tanh/ReLU/Sigmoid overwrites the Linear's fresh output in place
    (other activations run their forward): the outputs equal the Sequential's exactly."""
    torch.manual_seed(0)
    mlp = MlpModel(5, [8, 6], output_size=3, nonlinearity=nonlinearity)
    x = torch.randn(4, 5)
    x_before = x.clone()
    with torch.no_grad():
        assert torch.equal(mlp(x), mlp.model(x))
    assert torch.equal(x, x_before)  # the input itself is never overwritten
    with torch.inference_mode():
        assert torch.equal(mlp(x), mlp.model(x))


def test_mlp_in_place_activation_spares_outputs_a_hook_may_hold():
    """A Linear with hooks may hand its output to the hook: the activation after it then
    allocates a new tensor, so what the hook kept stays the pre-activation."""
    torch.manual_seed(0)
    mlp = MlpModel(5, [8], output_size=3, nonlinearity=torch.nn.Tanh)
    kept = []
    mlp.model[0].register_forward_hook(lambda module, args, output: kept.append(output))
    x = torch.randn(4, 5)
    with torch.no_grad():
        out = mlp(x)
        pre_activation = torch.nn.functional.linear(x, mlp.model[0].weight, mlp.model[0].bias)
    assert torch.equal(kept[0], pre_activation)
    assert torch.equal(out, mlp.model[2](torch.tanh(pre_activation)))


def test_mlp_reads_reassigned_parameters_on_every_call():
    mlp = MlpModel(5, [8], output_size=3, nonlinearity=torch.nn.ReLU)
    x = torch.randn(4, 5)
    mlp.model[2].weight = torch.nn.Parameter(torch.zeros(3, 8))
    with torch.no_grad():
        assert torch.equal(mlp(x), mlp.model[2].bias.expand(4, 3))


@pytest.mark.parametrize("bad", [[0], [4, -1], [2.5]])
def test_mlp_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match="hidden_sizes"):
        MlpModel(3, bad)


@FAST
@given(
    layers=st.lists(
        st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(0, 2)),
        min_size=1,
        max_size=3,
    ),
    use_maxpool=st.booleans(),
    hw=st.tuples(st.integers(3, 30), st.integers(3, 30)),
)
def test_conv_out_size_matches_forward(layers, use_maxpool, hw):
    channels, kernels, strides, paddings = (list(x) for x in zip(*layers))
    conv = Conv2dModel(2, channels, kernels, strides, paddings, use_maxpool=use_maxpool)
    h, w = hw
    try:
        size = conv.conv_out_size(h, w)
    except ValueError:  # too small an image: forward must fail as well
        with pytest.raises(RuntimeError):
            conv(torch.zeros(1, 2, h, w))
        return
    assert size == conv(torch.zeros(1, 2, h, w))[0].numel()


def test_conv_maxpool_moves_stride_to_pooling():
    conv = Conv2dModel(3, [4, 5], [3, 3], [2, 1], use_maxpool=True)
    convs = [m for m in conv.conv if isinstance(m, torch.nn.Conv2d)]
    pools = [m for m in conv.conv if isinstance(m, torch.nn.MaxPool2d)]
    assert all(c.stride == (1, 1) for c in convs) and len(pools) == 1
    assert conv(torch.zeros(2, 7, 3, 16, 16)).shape[:2] == (2, 7)


def test_conv_rejects_bad_arguments():
    with pytest.raises(ValueError, match="head_sizes"):
        Conv2dModel(3, [4], [3], [1], head_sizes=[32])
    with pytest.raises(ValueError, match="one entry per layer"):
        Conv2dModel(3, [4, 4], [3], [1, 1])
    with pytest.raises(ValueError, match="image_shape"):
        Conv2dHeadModel((3, 8), [4], [3], [1], hidden_sizes=8)


@pytest.mark.parametrize("lead", [(), (3,), (2, 3)])
def test_conv_head_keeps_leading_dims(lead):
    model = Conv2dHeadModel((2, 10, 10), [4, 8], [3, 3], [2, 1], hidden_sizes=[16], output_size=5)
    assert model.output_size == 5
    x = torch.randn(*lead, 2, 10, 10)
    out = model(x)
    assert out.shape == (*lead, 5)
    flat = model(x.reshape(-1, 2, 10, 10))
    torch.testing.assert_close(out.reshape(-1, 5), flat)
    no_head = Conv2dHeadModel((2, 10, 10), [4], [3], [1], hidden_sizes=None)
    assert no_head.output_size == 4 * 8 * 8


# ---------------------------------------------------------------- RunningMeanStd

batches_strategy = st.lists(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=2, max_size=2).map(tuple),
    min_size=1,
    max_size=12,
)


@FAST
@given(st.lists(batches_strategy, min_size=1, max_size=5))
def test_running_mean_std_matches_numpy(batches):
    rms = RunningMeanStdModel((2,))
    for batch in batches:
        rms.update(torch.tensor(batch, dtype=torch.float32))
    data = np.concatenate([np.asarray(b, dtype=np.float32) for b in batches]).astype(np.float64)
    np.testing.assert_allclose(rms.mean.numpy(), data.mean(0), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(rms.var.numpy(), data.var(0), rtol=1e-8, atol=1e-8)
    assert rms.count.item() == len(data)


@FAST
@given(st.lists(st.integers(1, 150), min_size=1, max_size=3), st.integers(0, 2**31 - 1),
       st.sampled_from([torch.uint8, torch.int8]))
def test_running_mean_std_of_frames_matches_numpy(rows, seed, dtype):
    """8-bit frames take their batch moments from exact sums (chunks of 64 rows in
    float32): float64's to its last bits, and a constant pixel's variance is 0."""
    gen = torch.Generator().manual_seed(seed)
    rms = RunningMeanStdModel((2, 5, 5))
    low, high = (0, 256) if dtype == torch.uint8 else (-128, 128)
    batches = [torch.randint(low, high, (n, 2, 5, 5), generator=gen).to(dtype) for n in rows]
    for batch in batches:
        batch[:, 0, 0, 0] = high - 1  # a pixel that never changes
        rms.update(batch)
    data = torch.cat(batches).double().numpy()
    np.testing.assert_allclose(rms.mean.numpy(), data.mean(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rms.var.numpy(), data.var(0), rtol=1e-10, atol=1e-10)
    assert rms.var[0, 0, 0].item() == 0.0
    assert rms.count.item() == len(data)


def test_running_mean_std_of_wide_integers_keeps_float64():
    """Integers beyond float32's 2**24 take float64's moments, where they are exact."""
    rms = RunningMeanStdModel(1)
    x = torch.tensor([[2**30], [2**30 + 1], [2**30 + 2]], dtype=torch.int64)
    rms.update(x)
    assert rms.mean.item() == 2**30 + 1
    assert rms.var.item() == pytest.approx(2 / 3, rel=1e-12)


def test_running_mean_std_forward_matches_the_formula_and_leaves_its_input():
    """uint8 frames and float input give ``(x - mean) / std`` clipped, bit for bit, and
    the float input (normalised in place inside ``forward``) is not written."""
    gen = torch.Generator().manual_seed(0)
    rms = RunningMeanStdModel((3, 4), clip=1.5)
    rms.update(torch.randint(0, 256, (20, 3, 4), generator=gen, dtype=torch.uint8))
    frames = torch.randint(0, 256, (6, 3, 4), generator=gen, dtype=torch.uint8)
    mean, std = rms.mean.float(), rms.std.float()
    assert torch.equal(rms(frames), ((frames.float() - mean) / std).clamp(-1.5, 1.5))
    x = frames.float().requires_grad_()
    before = x.detach().clone()
    out = rms(x)
    assert torch.equal(x.detach(), before)
    out.sum().backward()  # in-place steps keep the graph: 1/std inside the clip, else 0
    inside = ((x.detach() - mean) / std).abs() < 1.5
    torch.testing.assert_close(x.grad, torch.where(inside, 1 / std, torch.zeros(())))


def test_running_mean_std_ignores_an_empty_batch():
    rms = RunningMeanStdModel((2,))
    rms.update(torch.tensor([[1.0, 2.0], [3.0, 6.0]]))
    state = {k: v.clone() for k, v in rms.state_dict().items()}
    rms.update(torch.zeros(0, 2))
    rms.update(torch.zeros(0, 2, dtype=torch.uint8))
    for k, v in rms.state_dict().items():
        assert torch.equal(v, state[k])


def test_running_mean_std_forward_normalises_and_clips():
    rms = RunningMeanStdModel(3, min_var=1e-2, clip=2.0)
    x = torch.tensor([[0.0, 1.0, 5.0], [2.0, 3.0, 5.0]])
    assert torch.equal(rms(x), x.clamp(-2, 2))  # identity (then clip) before any update
    rms.update(x.reshape(1, 2, 3))  # leading dims are flattened
    out = rms(torch.tensor([2.0, 1.0, 5.5]))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch.tensor([1.0, -1.0, 2.0]))  # 0.5 / 0.1 = 5 -> 2
    with pytest.raises(ValueError, match="shape"):
        rms.update(torch.zeros(4, 2))
    state = rms.state_dict()
    assert set(state) == {"mean", "var", "count"}


def _distributed_rms_worker(rank, store_path, results):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=2)
    rms = RunningMeanStdModel((2,))
    gen = torch.Generator().manual_seed(rank)
    for n in (3, 5):
        rms.update(torch.randn(n + rank, 2, generator=gen) * (rank + 1) + rank)
    results.put((rank, rms.mean.numpy().copy(), rms.var.numpy().copy(), rms.count.item()))
    dist.destroy_process_group()


def test_running_mean_std_all_reduces_across_replicas():
    ctx = tmp.get_context("spawn")
    results = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as tmpdir:
        procs = [
            ctx.Process(target=_distributed_rms_worker, args=(r, f"{tmpdir}/store", results))
            for r in range(2)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
        assert all(p.exitcode == 0 for p in procs)
    got = dict((r, (m, v, c)) for r, m, v, c in (results.get() for _ in range(2)))
    data = []
    for rank in range(2):
        gen = torch.Generator().manual_seed(rank)
        for n in (3, 5):
            data.append(torch.randn(n + rank, 2, generator=gen) * (rank + 1) + rank)
    data = torch.cat(data).double().numpy()
    for rank in range(2):
        mean, var, count = got[rank]
        np.testing.assert_allclose(mean, data.mean(0), rtol=1e-6)
        np.testing.assert_allclose(var, data.var(0), rtol=1e-6)
        assert count == len(data)


# ---------------------------------------------------------------- model utils


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))


def _training_flags(model: torch.nn.Module) -> list:
    return [(name, module.training) for name, module in model.named_modules()]


def test_set_train_mode_matches_module_train_and_follows_new_submodules():
    model, reference = CategoricalPgLstmModel((4,), 2), CategoricalPgLstmModel((4,), 2)
    for mode in (False, True, False):
        set_train_mode(model, mode)
        reference.train(mode)
        assert _training_flags(model) == _training_flags(reference)
    model.extra = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout())
    model.extra[1] = torch.nn.Dropout(0.2)  # replaced inside a cached child
    set_train_mode(model, True)
    assert all(flag for _, flag in _training_flags(model))
    set_train_mode(model, False)
    assert not any(flag for _, flag in _training_flags(model))


def test_set_train_mode_calls_overridden_train_and_keeps_no_model_alive():
    calls = []

    class Custom(torch.nn.Linear):
        def train(self, mode=True):
            calls.append(mode)
            return super().train(mode)

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), Custom(2, 2))
    set_train_mode(model, False)
    assert calls == [False] and not any(flag for _, flag in _training_flags(model))
    plain = MlpModel(3, [4], 1)
    set_train_mode(plain, False)
    gone = weakref.ref(plain)
    del plain
    gc.collect()
    assert gone() is None


def test_update_state_dict_hard_and_soft():
    torch.manual_seed(0)
    target, source = Tiny(), Tiny()
    source.steps.fill_(7)
    old = {k: v.clone() for k, v in target.state_dict().items()}
    weight_ptr = target.lin.weight.data_ptr()
    update_state_dict(target, source.state_dict(), tau=0.25)
    for key in ("lin.weight", "lin.bias"):
        expected = 0.25 * source.state_dict()[key] + 0.75 * old[key]
        torch.testing.assert_close(target.state_dict()[key], expected)
    assert target.steps.item() == 7
    assert target.lin.weight.data_ptr() == weight_ptr  # updated in place
    update_state_dict(target, source.state_dict(), tau=1)
    for key, value in source.state_dict().items():
        assert torch.equal(target.state_dict()[key], value)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    update_state_dict(target, Tiny().state_dict(), tau=0)
    for key in ("lin.weight", "lin.bias"):
        assert torch.equal(target.state_dict()[key], before[key])


def test_update_state_dict_strips_ddp_prefix_and_checks_keys():
    target, source = Tiny(), Tiny()
    wrapped = {"module." + k: v for k, v in source.state_dict().items()}
    assert strip_ddp_state_dict(wrapped).keys() == source.state_dict().keys()
    update_state_dict(target, wrapped, tau=0.5)
    update_state_dict(target, wrapped)
    assert torch.equal(target.lin.weight, source.lin.weight)
    with pytest.raises(KeyError, match="missing"):
        update_state_dict(target, {"lin.weight": source.lin.weight}, tau=0.5)
    with pytest.raises(ValueError, match="tau"):
        update_state_dict(target, source.state_dict(), tau=1.5)


def test_scale_grad_identity_forward_scaled_backward():
    x = torch.randn(4, requires_grad=True)
    y = scale_grad(x, 0.5)
    assert torch.equal(y, x)
    (3 * y).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((4,), 1.5))


# ---------------------------------------------------------------- PG models

OBS_SHAPE = (3, 2)
IMG_SHAPE = (2, 36, 36)
N_ACT = 4
SMALL_CONV = dict(fc_sizes=32, channels=[4, 8], kernel_sizes=[8, 4], strides=[4, 2])


def make_inputs(kind, lead, gen):
    if kind == "atari":
        obs = torch.randint(0, 256, (*lead, *IMG_SHAPE), generator=gen, dtype=torch.uint8)
    else:
        obs = torch.randn(*lead, *OBS_SHAPE, generator=gen)
    if kind in ("atari", "categorical"):
        action = torch.randint(N_ACT, lead, generator=gen)
    else:
        action = torch.randn(*lead, N_ACT, generator=gen)
    reward = torch.randn(*lead, generator=gen)
    return obs, action, reward


FF_MODELS = {
    "atari_ff": ("atari", lambda: AtariFfModel(IMG_SHAPE, N_ACT, normalize_observation=True, **SMALL_CONV)),
    "mujoco_ff": ("gaussian", lambda: MujocoFfModel(OBS_SHAPE, N_ACT, normalize_observation=True)),
    "cat_mlp": ("categorical", lambda: CategoricalPgMlpModel(OBS_SHAPE, N_ACT)),
    "gauss_mlp": ("gaussian", lambda: GaussianPgMlpModel(OBS_SHAPE, N_ACT, init_log_std=-0.5)),
}
RNN_MODELS = {
    "atari_lstm": ("atari", lambda: AtariLstmModel(IMG_SHAPE, N_ACT, lstm_size=16,
                                                   normalize_observation=True, **SMALL_CONV)),
    "mujoco_lstm": (
        "gaussian",
        lambda: MujocoLstmModel(OBS_SHAPE, N_ACT, hidden_sizes=[16], lstm_size=12),
    ),
    "cat_lstm": ("categorical", lambda: CategoricalPgLstmModel(OBS_SHAPE, N_ACT)),
    "gauss_lstm": ("gaussian", lambda: GaussianPgLstmModel(OBS_SHAPE, N_ACT, lstm_size=20)),
}


def check_policy_outputs(kind, outputs, lead):
    if kind in ("atari", "categorical"):
        pi, v = outputs
        assert pi.shape == (*lead, N_ACT) and v.shape == lead
        torch.testing.assert_close(pi.sum(-1), torch.ones(lead))
    else:
        mu, log_std, v = outputs
        assert mu.shape == log_std.shape == (*lead, N_ACT) and v.shape == lead


@pytest.mark.parametrize("name", sorted(FF_MODELS))
def test_ff_models_leading_dims_agree(name):
    kind, make = FF_MODELS[name]
    torch.manual_seed(0)
    model = make()
    gen = torch.Generator().manual_seed(1)
    T, B = 3, 2
    obs, action, reward = make_inputs(kind, (T, B), gen)
    full = model(obs, action, reward)
    check_policy_outputs(kind, full, (T, B))
    for t in range(T):
        per_b = model(obs[t], action[t], reward[t])
        check_policy_outputs(kind, per_b, (B,))
        for b in range(B):
            single = model(obs[t, b], action[t, b], reward[t, b])
            check_policy_outputs(kind, single, ())
            for out_full, out_b, out_single in zip(full, per_b, single):
                torch.testing.assert_close(out_full[t, b], out_single)
                torch.testing.assert_close(out_b[b], out_single)


@pytest.mark.parametrize("Model", [CategoricalPgMlpModel, GaussianPgMlpModel])
def test_pg_mlp_direct_layer_calls_match_module_calls(Model):
    """The PG MLPs call F.linear on their layers' parameters directly; the outputs must be
    those of the plain module calls, hooks must still run, and reassigned parameters be used."""
    torch.manual_seed(0)
    model = Model((3, 2), 2)
    obs = torch.randn(4, 5, 3, 2)

    def plain(o):
        flat = o.reshape(-1, 6)
        head = model.pi(flat)
        head = torch.softmax(head, -1) if Model is CategoricalPgMlpModel else head
        return head.reshape(4, 5, 2), model.v(flat).reshape(4, 5)

    out = model(obs, None, None)
    expected = plain(obs)
    torch.testing.assert_close(out[0], expected[0], rtol=0, atol=0)
    torch.testing.assert_close(out[-1], expected[1], rtol=0, atol=0)
    model.v.model[2].weight = torch.nn.Parameter(torch.zeros(64, 64))
    torch.testing.assert_close(model(obs, None, None)[-1], plain(obs)[1], rtol=0, atol=0)
    calls = []
    model.pi.model[1].register_forward_hook(lambda *args: calls.append("layer"))
    model.v.register_forward_hook(lambda *args: calls.append("mlp"))
    model(obs[0, 0], None, None)
    assert calls == ["layer", "mlp"]


def test_pg_mlp_flattens_multi_dim_observations_without_leading_dims():
    model = CategoricalPgMlpModel((3, 2), 2)
    obs = torch.randn(3, 2)
    pi, v = model(obs, None, None)
    assert pi.shape == (2,) and v.shape == ()
    torch.testing.assert_close(model(obs[None], None, None)[0][0], pi)


@pytest.mark.parametrize("name", sorted(RNN_MODELS))
def test_rnn_models_sequence_equals_stepping(name):
    kind, make = RNN_MODELS[name]
    torch.manual_seed(0)
    model = make()
    gen = torch.Generator().manual_seed(2)
    T, B = 4, 3
    obs, action, reward = make_inputs(kind, (T, B), gen)
    *outs, state = model(obs, action, reward, None)
    check_policy_outputs(kind, outs, (T, B))
    n_layers, hidden = model.lstm.num_layers, model.lstm.hidden_size
    assert isinstance(state, RnnState)
    assert state.h.shape == state.c.shape == (n_layers, B, hidden)
    # Plain loop: one step at a time with [B] inputs, carrying the state.
    step_state = RnnState(torch.zeros(n_layers, B, hidden), torch.zeros(n_layers, B, hidden))
    for t in range(T):
        *step_outs, step_state = model(obs[t], action[t], reward[t], step_state)
        check_policy_outputs(kind, step_outs, (B,))
        for out, step_out in zip(outs, step_outs):
            torch.testing.assert_close(out[t], step_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(state.h, step_state.h, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(state.c, step_state.c, atol=1e-5, rtol=1e-5)
    # No leading dims: T = B = 1, state [N, 1, H].
    *single, single_state = model(obs[0, 0], action[0, 0], reward[0, 0], None)
    check_policy_outputs(kind, single, ())
    assert single_state.h.shape == (n_layers, 1, hidden)
    for out, one in zip(outs, single):
        torch.testing.assert_close(out[0, 0], one, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(RNN_MODELS))
def test_rnn_models_use_previous_action_and_reward(name):
    kind, make = RNN_MODELS[name]
    model = make()
    gen = torch.Generator().manual_seed(3)
    obs, action, reward = make_inputs(kind, (2,), gen)
    base = model(obs, action, reward, None)[0]
    other_action = (action + 1) % N_ACT if kind in ("atari", "categorical") else action + 1
    assert not torch.allclose(model(obs, other_action, reward, None)[0], base)
    assert not torch.allclose(model(obs, action, reward + 1, None)[0], base)


def test_rnn_model_rejects_bad_state_shape():
    model = CategoricalPgLstmModel(OBS_SHAPE, N_ACT, lstm_size=8)
    obs, action, reward = make_inputs("categorical", (2, 3), torch.Generator().manual_seed(0))
    bad = RnnState(torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
    with pytest.raises(ValueError, match="init_rnn_state"):
        model(obs, action, reward, bad)


def test_categorical_lstm_accepts_onehot_prev_action():
    model = CategoricalPgLstmModel(OBS_SHAPE, N_ACT)
    obs, action, reward = make_inputs("categorical", (2, 3), torch.Generator().manual_seed(0))
    onehot = torch.nn.functional.one_hot(action, N_ACT).float()
    torch.testing.assert_close(
        model(obs, action, reward, None)[0], model(obs, onehot, reward, None)[0]
    )


def test_atari_models_scale_pixels():
    model = AtariFfModel(IMG_SHAPE, N_ACT, **SMALL_CONV)
    img = torch.randint(0, 256, (2, *IMG_SHAPE), dtype=torch.uint8)
    pi, v = model(img, None, None)
    pi_f, v_f = model(img.float(), None, None)
    torch.testing.assert_close(pi, pi_f)
    features = model.conv(img.float() / 255)
    torch.testing.assert_close(v, model.value(features).squeeze(-1))


def test_atari_default_conv_sizes():
    model = AtariFfModel((4, 84, 84), 6)
    convs = [m for m in model.conv.conv.conv if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [16, 32]
    assert model.conv.output_size == 512
    pi, v = model(torch.zeros(5, 4, 84, 84, dtype=torch.uint8), None, None)
    assert pi.shape == (5, 6) and v.shape == (5,)


@pytest.mark.parametrize("orthogonal", [True, False])
def test_atari_ff_init_keeps_the_features_scale(orthogonal):
    """Orthogonal init (the default): gain sqrt(2) keeps the ReLU torso's features near
    the input's scale, the policy starts near uniform and the biases at 0.  Torch's
    default init shrinks the features by an order of magnitude."""
    torch.manual_seed(0)
    model = AtariFfModel((4, 84, 84), 6, channels=[16, 32], kernel_sizes=[8, 4],
                         strides=[4, 2], paddings=[0, 0], fc_sizes=256,
                         orthogonal_init=orthogonal)
    img = torch.rand(64, 4, 84, 84)
    features_rms = model.conv(img).pow(2).mean().sqrt().item()
    input_rms = img.pow(2).mean().sqrt().item()
    pi, _ = model(img * 255, None, None)
    if orthogonal:
        assert 0.3 * input_rms < features_rms < 3 * input_rms
        assert (pi - 1 / 6).abs().max().item() < 0.01
        assert all((m.bias == 0).all() for m in model.modules()
                   if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)))
        weight = model.pi.weight
        torch.testing.assert_close(weight @ weight.T, 1e-4 * torch.eye(6), atol=1e-6, rtol=0)
    else:
        assert features_rms < 0.2 * input_rms


def test_atari_ff_normalizes_pixels_by_their_running_statistics():
    """``normalize_observation``: each pixel of the stack is (x - mean) / std of its own
    running statistics, clipped to 5, in place of the 1/255 scale; statistics change only
    through ``update_obs_rms`` (not in ``forward``), and a constant pixel maps to 0."""
    torch.manual_seed(0)
    model = AtariFfModel(IMG_SHAPE, N_ACT, normalize_observation=True, **SMALL_CONV)
    background = torch.full((32, *IMG_SHAPE), 87, dtype=torch.uint8)
    frames = background.clone()
    frames[:4, :, 2, 3] = 236  # a sprite seen in 4 of 32 frames
    model(frames, None, None)
    assert model.obs_rms.count.item() == 0  # forward does not update
    model.update_obs_rms(frames)
    mean = frames.double().mean(0)
    std = frames.double().var(0, unbiased=False).clamp(min=1e-6).sqrt()
    expected = ((frames.double() - mean) / std).clamp(-5, 5).float()
    seen = {}
    model.conv.register_forward_hook(lambda m, args, out: seen.update(x=args[0]))
    pi, v = model(frames, None, None)
    torch.testing.assert_close(seen["x"], expected)
    assert seen["x"][4:].abs().max().item() < 0.4  # background near 0
    assert seen["x"][:4, :, 2, 3].min().item() > 2  # the sprite stands out
    assert pi.shape == (32, N_ACT) and v.shape == (32,)
    assert "obs_rms.mean" in model.state_dict()  # saved with the model
    plain = AtariFfModel(IMG_SHAPE, N_ACT, **SMALL_CONV)
    assert plain.obs_rms is None and "obs_rms.mean" not in plain.state_dict()


def test_atari_lstm_init_and_pixel_normalization():
    """``AtariLstmModel`` has ``AtariFfModel``'s orthogonal torso and heads, orthogonal
    LSTM weights with zero biases, and the same per-pixel normalisation at the conv."""
    torch.manual_seed(0)
    model = AtariLstmModel(IMG_SHAPE, N_ACT, lstm_size=16, normalize_observation=True,
                           **SMALL_CONV)
    weight = model.pi.weight
    torch.testing.assert_close(weight @ weight.T, 1e-4 * torch.eye(N_ACT), atol=1e-6, rtol=0)
    for name, param in model.lstm.named_parameters():
        if name.startswith("bias"):
            assert torch.equal(param, torch.zeros_like(param))
        else:
            torch.testing.assert_close(param.T @ param, torch.eye(param.shape[1]),
                                       atol=1e-5, rtol=1e-4)
    assert all((m.bias == 0).all() for m in model.conv.modules()
               if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)))
    frames = torch.randint(0, 256, (3, 4, *IMG_SHAPE), dtype=torch.uint8)
    model.update_obs_rms(frames)
    seen = {}
    model.conv.register_forward_hook(lambda m, args, out: seen.update(x=args[0]))
    pi, v, _ = model(frames, torch.zeros(3, 4, dtype=torch.long), torch.zeros(3, 4), None)
    flat = frames.reshape(12, *IMG_SHAPE).double()
    expected = ((flat - flat.mean(0)) / flat.var(0, unbiased=False).clamp(min=1e-6).sqrt())
    torch.testing.assert_close(seen["x"], expected.clamp(-5, 5).float())
    assert pi.shape == (3, 4, N_ACT) and v.shape == (3, 4)
    plain = AtariLstmModel(IMG_SHAPE, N_ACT, lstm_size=16, orthogonal_init=False, **SMALL_CONV)
    assert plain.obs_rms is None and plain.pi.weight.norm().item() > 0.1


def test_gaussian_log_std_is_learned_and_state_independent():
    model = GaussianPgMlpModel(OBS_SHAPE, N_ACT, init_log_std=-0.5)
    obs = torch.randn(5, *OBS_SHAPE)
    mu, log_std, v = model(obs, None, None)
    torch.testing.assert_close(log_std, torch.full((5, N_ACT), -0.5))
    (log_std.sum() + mu.sum()).backward()
    torch.testing.assert_close(model.log_std.grad, torch.full((N_ACT,), 5.0))
    mujoco = MujocoFfModel(OBS_SHAPE, N_ACT, init_log_std=0.3)
    mu, log_std, _ = mujoco(obs, None, None)
    assert mu.abs().max() <= 1  # tanh mean by default
    torch.testing.assert_close(log_std[0], torch.full((N_ACT,), 0.3))


def test_generic_mlp_orthogonal_init():
    model = CategoricalPgMlpModel((8,), 3, hidden_sizes=(64, 64))
    layers = [m for m in model.pi.modules() if isinstance(m, torch.nn.Linear)]
    gains = [math.sqrt(2), math.sqrt(2), 0.01]
    for layer, gain in zip(layers, gains):
        w = layer.weight.detach()
        rows, cols = w.shape
        gram = w @ w.T if rows <= cols else w.T @ w
        torch.testing.assert_close(gram, gain**2 * torch.eye(min(rows, cols)), atol=1e-5, rtol=1e-4)
        assert torch.equal(layer.bias, torch.zeros_like(layer.bias))
    value_out = [m for m in model.v.modules() if isinstance(m, torch.nn.Linear)][-1]
    assert value_out.weight.norm().item() == pytest.approx(1.0, abs=1e-5)


def test_observation_normalisation_is_explicit():
    model = MujocoFfModel(OBS_SHAPE, N_ACT, normalize_observation=True, norm_obs_clip=3)
    obs = 5 + 2 * torch.randn(50, *OBS_SHAPE)
    model.eval()
    before = model(obs, None, None)
    assert model.obs_rms.count.item() == 0  # forward never updates
    model.update_obs_rms(obs)
    assert model.obs_rms.count.item() == 50
    after = model(obs, None, None)
    assert not torch.allclose(before[0], after[0])
    expected = ((obs - obs.mean(0)) / obs.std(0, unbiased=False)).clamp(-3, 3)
    torch.testing.assert_close(model.normalize_obs(obs), expected, atol=1e-5, rtol=1e-5)
    assert model.normalize_obs(torch.full(OBS_SHAPE, 1e6)).max() == 3
    plain = MujocoFfModel(OBS_SHAPE, N_ACT)
    plain.update_obs_rms(obs)  # a no-op without normalisation
    assert plain.obs_rms is None
    assert "obs_rms.mean" in model.state_dict()


def test_multi_dim_observations_are_flattened():
    model = GaussianPgLstmModel((2, 3, 2), 2)
    obs = torch.randn(4, 5, 2, 3, 2)
    mu, log_std, v, state = model(obs, torch.randn(4, 5, 2), torch.randn(4, 5), None)
    assert mu.shape == (4, 5, 2) and v.shape == (4, 5) and state.h.shape == (1, 5, 64)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_models_and_utils_on_cuda():
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(0)
    for kind, make in list(FF_MODELS.values()) + list(RNN_MODELS.values()):
        model = make().to(dev)
        inputs = [x.to(dev) for x in make_inputs(kind, (3, 2), gen)]
        if hasattr(model, "lstm"):
            inputs.append(None)
        if hasattr(model, "update_obs_rms"):
            model.update_obs_rms(inputs[0])
        assert all(o.device.type == "cuda" for o in model(*inputs) if torch.is_tensor(o))
    target, source = Tiny().to(dev), Tiny()
    update_state_dict(target, source.state_dict(), tau=0.5)
    update_state_dict(target, source.state_dict())
    assert torch.equal(target.lin.weight.cpu(), source.lin.weight)


@pytest.mark.parametrize("Model", [CategoricalPgMlpModel, GaussianPgMlpModel])
@pytest.mark.parametrize("lead", [(), (5,), (3, 4)])
def test_pg_mlp_value_alone_equals_forward_value(Model, lead):
    """``value`` runs only the value MLP; it must return forward's value output exactly."""
    torch.manual_seed(0)
    model = Model(OBS_SHAPE, N_ACT, normalize_observation=True)
    model.update_obs_rms(torch.randn(16, *OBS_SHAPE) * 3 + 1)
    obs = torch.randn(*lead, *OBS_SHAPE)
    with torch.no_grad():
        expected = model(obs, None, None)[-1]
        torch.testing.assert_close(model.value(obs, None, None), expected, rtol=0, atol=0)
    assert model.value(obs, None, None).shape == lead
