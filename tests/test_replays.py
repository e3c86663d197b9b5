"""Transition replay buffers against plain-loop references on random streams."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_replays_reference import (
    SamplesToBuffer,
    Stream,
    ref_n_step,
    ref_previous,
    retained_steps,
)

from rlpyt.replays.base import PrioritiesSamplesToBuffer
from rlpyt.replays.non_sequence.frame import (
    AsyncPrioritizedReplayFrameBuffer,
    AsyncUniformReplayFrameBuffer,
    PrioritizedReplayFrameBuffer,
    TlUniformReplayFrameBuffer,
    UniformReplayFrameBuffer,
)
from rlpyt.replays.non_sequence.prioritized import (
    AsyncPrioritizedReplayBuffer,
    PrioritizedReplayBuffer,
)
from rlpyt.replays.non_sequence.time_limit import (
    AsyncTlPrioritizedReplayBuffer,
    AsyncTlUniformReplayBuffer,
    TlPrioritizedReplayBuffer,
    TlUniformReplayBuffer,
)
from rlpyt.replays.non_sequence.uniform import AsyncUniformReplayBuffer, UniformReplayBuffer

# name: (class, stream options)
BUFFERS = {
    "uniform": (UniformReplayBuffer, {}),
    "prioritized": (PrioritizedReplayBuffer, {}),
    "tl_uniform": (TlUniformReplayBuffer, {"timeout": True}),
    "tl_prioritized": (TlPrioritizedReplayBuffer, {"timeout": True}),
    "frame_uniform": (UniformReplayFrameBuffer, {"n_frames": None}),
    "frame_prioritized": (PrioritizedReplayFrameBuffer, {"n_frames": None}),
    "async_uniform": (AsyncUniformReplayBuffer, {}),
    "async_prioritized": (AsyncPrioritizedReplayBuffer, {}),
    "async_tl_uniform": (AsyncTlUniformReplayBuffer, {"timeout": True}),
    "async_tl_prioritized": (AsyncTlPrioritizedReplayBuffer, {"timeout": True}),
    "async_frame_uniform": (AsyncUniformReplayFrameBuffer, {"n_frames": None}),
    "async_frame_prioritized": (AsyncPrioritizedReplayFrameBuffer, {"n_frames": None}),
}


def reads_before(stream_kwargs):
    """Steps a transition sample reads before its own: prev_action, or earlier frames."""
    return max(1, stream_kwargs.get("n_frames", 1) - 1)


def concrete(stream_kwargs, n_frames):
    """Stream options with the frame count filled in for frame buffers."""
    return {k: (n_frames if v is None else v) for k, v in stream_kwargs.items()}


@st.composite
def setups(draw):
    name = draw(st.sampled_from(sorted(BUFFERS)))
    stream_kwargs = concrete(BUFFERS[name][1], draw(st.sampled_from([1, 2, 4])))
    before = reads_before(stream_kwargs)
    B = draw(st.integers(1, 3))
    n = draw(st.integers(1, 4))
    T = draw(st.integers(n + before + 1, 14))
    appends = draw(st.lists(st.integers(1, T), min_size=1, max_size=7))
    return dict(
        name=name, stream_kwargs=stream_kwargs, B=B, n=n, T=T, appends=appends,
        size=T * B + draw(st.integers(0, B - 1)),  # Rounded down to T * B.
        discount=draw(st.sampled_from([1.0, 0.9, 0.5])),
        seed=draw(st.integers(0, 2**16)),
    )


def check_against_reference(buf, stream, n, discount, before):
    """Every valid position of ``buf`` extracts what the references say; nothing else
    is valid."""
    h, B, count = stream.history, stream.B, stream.count
    valid = retained_steps(count, buf.T, before, n)
    low, high = buf.valid_row_range()
    assert list(range(low, high)) == valid
    if hasattr(buf, "priority_tree"):  # Exactly the valid positions can be sampled.
        expected = np.zeros((buf.T, B), dtype=bool)
        expected[np.array(valid, dtype=np.int64) % buf.T] = True
        assert np.array_equal(buf.priority_tree.leaf_values() > 0, expected)
    if not valid:
        with pytest.raises(RuntimeError, match="sample"):
            buf.sample_batch(4)
        return
    steps = np.repeat(valid, B)
    envs = np.tile(np.arange(B), len(valid))
    batch = buf.extract_batch(steps % buf.T, envs)
    assert isinstance(batch.return_, torch.Tensor)
    for i, (p, b) in enumerate(zip(steps, envs)):
        ret, done_n, timeout_n = ref_n_step(h, p, b, n, discount)
        inputs, target = batch.agent_inputs, batch.target_inputs
        assert np.array_equal(inputs.observation[i].numpy(), h["observation"][p, b])
        assert inputs.prev_action[i] == ref_previous(h, "action", p, b)
        assert inputs.prev_reward[i] == ref_previous(h, "reward", p, b)
        assert batch.action[i] == h["action"][p, b]
        assert batch.return_[i].item() == pytest.approx(ret, rel=1e-5, abs=1e-5)
        assert batch.done[i] == h["done"][p, b]
        assert batch.done_n[i] == done_n
        assert np.array_equal(target.observation[i].numpy(), h["observation"][p + n, b])
        assert target.prev_action[i] == h["action"][p + n - 1, b]
        assert target.prev_reward[i] == h["reward"][p + n - 1, b]
        if "timeout" in h:
            assert batch.timeout[i] == h["timeout"][p, b]
            assert batch.timeout_n[i] == timeout_n


@settings(max_examples=60, deadline=None)
@given(setups())
def test_buffers_match_reference_on_random_streams(setup):
    cls, stream_kwargs = BUFFERS[setup["name"]][0], setup["stream_kwargs"]
    stream = Stream(setup["B"], seed=setup["seed"], **stream_kwargs)
    buf = cls(stream.example(), setup["size"], setup["B"], discount=setup["discount"],
              n_step_return=setup["n"])
    assert buf.T == setup["T"] and buf.size == setup["T"] * setup["B"]
    for T_new in setup["appends"]:
        T_idxs, B_idxs = buf.append_samples(stream.batch(T_new))
        assert np.array_equal(T_idxs, np.arange(stream.count - T_new, stream.count) % buf.T)
        assert np.array_equal(B_idxs, np.arange(setup["B"]))
        check_against_reference(buf, stream, setup["n"], setup["discount"],
                                 reads_before(stream_kwargs))


@pytest.mark.parametrize("name", ["uniform", "prioritized", "frame_uniform", "tl_prioritized"])
def test_sample_batch_draws_only_valid_positions(name):
    cls, stream_kwargs = BUFFERS[name][0], concrete(BUFFERS[name][1], 4)
    np.random.seed(0)
    stream = Stream(2, seed=3, **stream_kwargs)
    buf = cls(stream.example(), 24, 2, discount=0.9, n_step_return=3)
    for T_new in (5, 7, 9):
        buf.append_samples(stream.batch(T_new))
    h = stream.history
    valid = set(retained_steps(stream.count, buf.T, reads_before(stream_kwargs), 3))
    seen = set()
    for _ in range(20):
        batch = buf.sample_batch(32)
        assert batch.return_.shape == (32,)
        obs = batch.agent_inputs.observation.numpy()
        target_obs = batch.target_inputs.observation.numpy()
        for i in range(32):  # Recover each sample's position from its observations.
            match = [(p, b) for p in valid for b in range(2)
                     if np.array_equal(h["observation"][p, b], obs[i])
                     and np.array_equal(h["observation"][p + 3, b], target_obs[i])]
            assert match, "sampled a position outside the valid set"
            seen.update(match)
    assert len(seen) == 2 * len(valid)  # Every valid position came up.


def test_uniform_sampling_frequencies_are_flat():
    np.random.seed(4)
    stream = Stream(3, seed=4)
    buf = UniformReplayBuffer(stream.example(), 30, 3, n_step_return=2)
    buf.append_samples(stream.batch(10))
    low, high = buf.valid_row_range()
    counts = np.zeros((buf.T, 3))
    for _ in range(400):
        T_idxs, B_idxs = buf.sample_idxs(64)
        np.add.at(counts, (T_idxs, B_idxs), 1)
    valid = counts[low:high].ravel()
    assert counts.sum() == valid.sum()  # Nothing outside the valid rows.
    expected = counts.sum() / len(valid)
    chi2 = ((valid - expected) ** 2 / expected).sum()
    assert chi2 < 60  # 23 degrees of freedom: p < 1e-4 for a flat distribution.


@pytest.mark.parametrize("name", ["uniform", "tl_prioritized", "frame_uniform"])
def test_prev_inputs_off_leaves_them_out_and_keeps_the_rest(name):
    cls, stream_kwargs = BUFFERS[name][0], concrete(BUFFERS[name][1], 4)
    stream = Stream(2, seed=5, **stream_kwargs)
    buf = cls(stream.example(), 24, 2, discount=0.9, n_step_return=2)
    buf.append_samples(stream.batch(12))
    buf.append_samples(stream.batch(3))  # Wrapped: positions 0..2 hold the newest steps.
    T_idxs, B_idxs = np.array([3, 5, 7, 9]), np.array([0, 1, 1, 0])
    full = buf.extract_batch(T_idxs, B_idxs)
    buf.prev_inputs = False
    lean = buf.extract_batch(T_idxs, B_idxs)
    for inputs in (lean.agent_inputs, lean.target_inputs):
        assert inputs.prev_action is None and inputs.prev_reward is None
    assert torch.equal(lean.agent_inputs.observation, full.agent_inputs.observation)
    assert torch.equal(lean.target_inputs.observation, full.target_inputs.observation)
    for field in full._fields[1:]:
        if field not in ("agent_inputs", "target_inputs"):
            assert torch.equal(getattr(lean, field), getattr(full, field)), field


def test_torch_inputs_are_accepted():
    stream = Stream(2, seed=0)
    buf = UniformReplayBuffer(stream.example(), 20, 2)
    batch = stream.batch(6)
    buf.append_samples(SamplesToBuffer(*(torch.from_numpy(np.asarray(v)) for v in batch)))
    assert np.array_equal(buf.samples.reward[:6], batch.reward)


# ----- prioritized specifics -----


def prioritized(alpha=0.6, beta=0.4, T=10, B=2, **kwargs):
    stream = Stream(B, seed=0, done_p=0.0)
    buf = PrioritizedReplayBuffer(stream.example(), T * B, B, alpha=alpha, beta=beta, **kwargs)
    return buf, stream


def test_new_samples_get_the_max_priority_seen():
    np.random.seed(0)
    buf, stream = prioritized(alpha=0.5, default_priority=2.0)
    buf.append_samples(stream.batch(4))
    assert np.all(buf.priority_tree.priorities[:4] == 2.0 ** 0.5)
    buf.sample_batch(3)
    buf.update_batch_priorities(np.array([9.0, 1.0, 0.5]))
    buf.append_samples(stream.batch(2))
    assert np.all(buf.priority_tree.priorities[4:6] == 9.0 ** 0.5)
    buf.update_priorities([0], [1], [16.0])
    buf.append_samples(stream.batch(1))
    assert np.all(buf.priority_tree.priorities[6] == 4.0)


def test_is_weights_follow_the_definition():
    np.random.seed(1)
    buf, stream = prioritized(alpha=0.7, beta=0.5, T=12, B=2)
    buf.append_samples(stream.batch(12))
    rows, envs = np.meshgrid(np.arange(12), np.arange(2), indexing="ij")
    priorities = np.random.uniform(0.1, 3.0, size=(12, 2))
    buf.update_priorities(rows.ravel(), envs.ravel(), priorities.ravel())
    batch = buf.sample_batch(64)
    sampled_rows, sampled_envs, _ = buf._sampled
    leaf = buf.priority_tree.leaf_values()
    valid = leaf > 0
    n_valid = valid.sum()
    prob = (priorities ** 0.7 * valid) / (priorities[valid] ** 0.7).sum()
    w = [(n_valid * prob[t, b]) ** -0.5 for t, b in zip(sampled_rows, sampled_envs)]
    expected = np.array(w) / max(w)
    assert np.allclose(batch.is_weights.numpy(), expected, rtol=1e-5)
    assert batch.is_weights.dtype == torch.float32


def test_sampling_frequencies_follow_priorities_to_the_alpha():
    np.random.seed(2)
    buf, stream = prioritized(alpha=0.5, T=8, B=1)
    buf.append_samples(stream.batch(8))
    buf.update_priorities(np.arange(8), np.zeros(8, int), np.arange(1, 9, dtype=float) ** 2)
    counts = np.zeros(8)
    n = 40_000
    for _ in range(n // 500):
        buf.sample_batch(500)
        np.add.at(counts, buf._sampled[0], 1)
    valid = buf.priority_tree.leaf_values()[:, 0] > 0
    expected_p = np.where(valid, np.arange(1, 9), 0) / np.arange(1, 9)[valid].sum()
    sigma = np.sqrt(n * expected_p * (1 - expected_p))
    assert np.all(np.abs(counts - n * expected_p) <= 5 * sigma + 1)


def test_beta_anneals_with_appended_transitions_and_set_beta_overrides():
    buf, stream = prioritized(beta=0.4, beta_final=1.0, beta_steps=40, T=30, B=2)
    assert buf.current_beta() == pytest.approx(0.4)
    buf.append_samples(stream.batch(10))  # 20 transitions: half way.
    assert buf.current_beta() == pytest.approx(0.7)
    buf.append_samples(stream.batch(15))
    assert buf.current_beta() == pytest.approx(1.0)
    buf.set_beta(0.2)
    assert buf.current_beta() == 0.2


def test_input_priorities_replace_the_default():
    buf, stream = prioritized(alpha=1.0, input_priorities=True, T=10, B=2)
    p = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    buf.append_samples(PrioritiesSamplesToBuffer(priorities=p, samples=stream.batch(3)))
    assert np.array_equal(buf.priority_tree.priorities[:3], p)
    buf.append_samples(PrioritiesSamplesToBuffer(priorities=np.array([7.0, 8.0]),
                                                 samples=stream.batch(2)))
    assert np.array_equal(buf.priority_tree.priorities[3:5], [[7.0, 8.0], [7.0, 8.0]])
    with pytest.raises(ValueError, match="input_priorities=True"):
        buf.append_samples(stream.batch(1))
    with pytest.raises(ValueError, match="do not fit"):
        buf.append_samples(PrioritiesSamplesToBuffer(priorities=np.ones(3),
                                                     samples=stream.batch(1)))
    plain, stream2 = prioritized()
    with pytest.raises(ValueError, match="input_priorities=False"):
        plain.append_samples(PrioritiesSamplesToBuffer(priorities=1.0, samples=stream2.batch(1)))


def test_update_batch_priorities_skips_positions_overwritten_since_sampling():
    np.random.seed(3)
    buf, stream = prioritized(alpha=1.0, T=6, B=1)
    buf.append_samples(stream.batch(6))
    buf.sample_batch(50)
    rows = buf._sampled[0]
    assert 1 in rows
    buf.append_samples(stream.batch(2))  # Overwrites ring rows 0 and 1.
    buf.update_batch_priorities(np.full(50, 7.0))
    stored = buf.priority_tree.priorities[:, 0]
    assert all(stored[r] == 7.0 for r in set(rows.tolist()) - {0, 1})
    assert stored[1] == 1.0  # The new step kept its own (max at append) priority.


def test_prioritized_errors_name_the_argument():
    with pytest.raises(ValueError, match="alpha"):
        prioritized(alpha=-1)
    with pytest.raises(ValueError, match="beta_final"):
        prioritized(beta_final=1.0)
    buf, stream = prioritized()
    with pytest.raises(RuntimeError, match="no batch"):
        buf.update_batch_priorities(np.ones(2))
    buf.append_samples(stream.batch(8))
    buf.sample_batch(4)
    with pytest.raises(ValueError, match="3 priorities for 4"):
        buf.update_batch_priorities(np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        buf.update_batch_priorities(np.array([1.0, np.nan, 1.0, 1.0]))
    with pytest.raises(ValueError, match="batch_B"):
        buf.sample_batch(0)


# ----- construction and input errors -----


def test_constructor_errors_name_the_argument():
    example = Stream(2, seed=0).example()
    with pytest.raises(ValueError, match="n_step_return=0"):
        UniformReplayBuffer(example, 20, 2, n_step_return=0)
    with pytest.raises(ValueError, match="size=1"):
        UniformReplayBuffer(example, 1, 2)
    with pytest.raises(ValueError, match="discount=1.5"):
        UniformReplayBuffer(example, 20, 2, discount=1.5)
    with pytest.raises(ValueError, match="larger size"):
        UniformReplayBuffer(example, 8, 2, n_step_return=3)
    with pytest.raises(ValueError, match="timeout"):
        TlUniformReplayBuffer(example, 20, 2)
    with pytest.raises(TypeError, match="namedtuple"):
        UniformReplayBuffer({"observation": 0}, 20, 2)
    with pytest.raises(ValueError, match="n_frames"):
        UniformReplayFrameBuffer(example._replace(observation=np.zeros(3)), 20, 2)


def test_append_errors_name_the_shape():
    stream = Stream(2, seed=0)
    buf = UniformReplayBuffer(stream.example(), 20, 2)
    with pytest.raises(ValueError, match="B=3"):
        buf.append_samples(Stream(3, seed=0).batch(2))
    with pytest.raises(ValueError, match="T=11"):
        buf.append_samples(stream.batch(11))
    frames = Stream(2, seed=0, n_frames=4)
    fbuf = UniformReplayFrameBuffer(frames.example(), 20, 2)
    wrong = frames.batch(2)
    with pytest.raises(ValueError, match="n_frames=4"):
        fbuf.append_samples(wrong._replace(observation=wrong.observation[:, :, :3]))


# ----- memory -----


def test_frame_buffer_bytes_per_transition_fit_the_budget():
    """1M Pong transitions must fit in ~1.05 x one 104x80 uint8 frame each plus small
    fields; the ring overhead (n_frames - 1 extra frames per env) shrinks with size, so
    a small buffer is a conservative check."""
    example = SamplesToBuffer(np.zeros((4, 104, 80), np.uint8), np.int64(0), np.float32(0),
                              False)
    size, B = 4000, 8
    frame_bytes = 104 * 80
    buf = UniformReplayFrameBuffer(example, size, B, discount=0.99, n_step_return=3)
    per_step_fields = 8 + 4 + 1 + 4 + 1  # action, reward, done, return_, done_n
    assert buf.nbytes / size <= 1.05 * frame_bytes + per_step_fields
    assert buf.nbytes / size >= frame_bytes  # Sanity: the frames are all there.
    full = UniformReplayBuffer(example, size, B, discount=0.99, n_step_return=3)
    assert full.nbytes / buf.nbytes == pytest.approx(4.0, rel=0.03)


def test_buffers_pickle_with_their_data_after_sampling():
    import pickle

    np.random.seed(0)
    stream = Stream(2, seed=0, n_frames=4)
    buf = PrioritizedReplayFrameBuffer(stream.example(), 40, 2, n_step_return=2)
    buf.append_samples(stream.batch(12))
    buf.sample_batch(4)
    copy = pickle.loads(pickle.dumps(buf))
    assert copy.count == buf.count
    assert np.array_equal(copy.samples_frames, buf.samples_frames)
    assert np.array_equal(copy.priority_tree.tree, buf.priority_tree.tree)
    batch = copy.extract_batch(np.arange(1, 9), np.zeros(8, dtype=np.int64))
    assert np.array_equal(batch.agent_inputs.observation.numpy(),
                          stream.history["observation"][1:9, 0])


# ----- frame storage checks what it assumes -----


def test_frame_buffer_refuses_a_uint8_image_that_is_not_a_frame_stack():
    """A [C, H, W] uint8 channel image (RGB, MinAtar as uint8) looks like a frame stack
    to the replay rule; storing it frame by frame would rebuild it wrong, so the first
    append says so and names the replay that stores whole observations."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(6, 2, 3, 5, 5)).astype(np.uint8)
    example = SamplesToBuffer(images[0, 0], np.int64(0), np.float32(0), False)
    buf = UniformReplayFrameBuffer(example, 20, 2)
    batch = SamplesToBuffer(images, np.zeros((6, 2), np.int64), np.zeros((6, 2), np.float32),
                            np.zeros((6, 2), bool))
    with pytest.raises(ValueError, match="not one frame stack shifted.*ReplayBufferCls="):
        buf.append_samples(batch)
    whole = UniformReplayBuffer(example, 20, 2)  # The suggested replay stores them exactly.
    whole.append_samples(batch)
    assert np.array_equal(whole.samples.observation[:6], images)


def test_frame_buffer_refuses_stacks_padded_by_repeating_the_first_frame():
    """After a reset the rebuilt stack is zero-padded; an env that pads by repeating
    its first frame (Gymnasium's FrameStackObservation default) would be trained on
    stacks it never showed the agent."""
    stream = Stream(2, seed=1, n_frames=4, done_p=0.3)
    batch = stream.batch(10)
    obs = np.array(batch.observation)
    done = np.asarray(batch.done)
    t, b = (int(i) for i in np.argwhere(done[:-1])[0])
    obs[t + 1, b, :3] = obs[t + 1, b, 3]  # Repeat the newest frame instead of zeros.
    buf = UniformReplayFrameBuffer(stream.example(), 40, 2)
    with pytest.raises(ValueError, match="not zero-padded"):
        buf.append_samples(batch._replace(observation=obs))


def test_frame_buffer_checks_the_seam_between_appends_then_stops_checking():
    stream = Stream(2, seed=2, n_frames=4)
    buf = UniformReplayFrameBuffer(stream.example(), 400, 2)
    buf.verify_steps = 12
    buf.append_samples(stream.batch(6))
    second = stream.batch(6)
    broken = np.array(second.observation)
    broken[0, 0] = 255 - broken[0, 0]  # Only its link to the previous append is wrong.
    with pytest.raises(ValueError, match="shifted"):
        buf.append_samples(second._replace(observation=broken))
    buf.append_samples(second)
    buf.append_samples(stream.batch(6))  # 15 steps verified: checking stops here.
    unchecked = stream.batch(6)
    buf.append_samples(unchecked._replace(observation=255 - np.array(unchecked.observation)))


def test_frame_buffer_ignores_masked_filler_steps():
    """Wait-reset collectors write filler steps (flagged ``timeout``) after an env's
    episode ends; their observations are not part of any stack and are not checked."""
    stream = Stream(2, seed=3, n_frames=4, timeout=True, done_p=0.0)
    batch = stream.batch(8)
    obs, timeout = np.array(batch.observation), np.array(batch.timeout)
    obs[5:, 1] = 7  # Env 1 idles after step 4: frozen filler.
    timeout[5:, 1] = True
    buf = TlUniformReplayFrameBuffer(stream.example(), 40, 2)
    buf.append_samples(batch._replace(observation=obs, timeout=timeout))
