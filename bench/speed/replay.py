"""Replay benchmarks (parts (b) and (c) of the DQN benchmark).

(b) Prioritized replay throughput at 1M capacity: appends, ``sample_batch(32)`` and
    ``sample_batch(256)``, and priority updates of those batches, per second, against
    TorchRL's ``PrioritizedReplayBuffer`` with the same settings (alpha 0.6, beta 0.4,
    1M capacity, the same fields) when TorchRL imports and works; otherwise the peer
    is skipped with the reason.
(c) Bytes per transition of the frame buffer (each Atari frame stored once) against
    a buffer storing full frame stacks, for Pong-sized observations (4 x 104 x 80
    uint8), and the figure for 1M transitions.

Usage::

    python bench/speed/replay.py                 # full run, 1M capacity
    python bench/speed/replay.py --capacity 100000 --repeats 3

Timings are the best of ``--repeats`` rounds of ``--iterations`` calls, on this
process's CPU clock by default (``--clock cpu``): single-threaded work then reads
the same on a busy shared machine as on an idle one.  ``--clock wall`` uses wall time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from rlpyt.replays.non_sequence.frame import UniformReplayFrameBuffer
from rlpyt.replays.non_sequence.prioritized import PrioritizedReplayBuffer
from rlpyt.replays.non_sequence.uniform import UniformReplayBuffer
from rlpyt.utils.collections import namedarraytuple

SamplesToBuffer = namedarraytuple("SamplesToBuffer", ["observation", "action", "reward", "done"])

OBS_DIM = 8  # Small observations: (b) measures the replay machinery, not memcpy.
ENVS = 8  # B: environments appending side by side.
ADD_T = 32  # Steps per append: one [32, 8] sampler batch = 256 transitions.
ALPHA, BETA = 0.6, 0.4


CLOCK = time.process_time  # Set by --clock.


def best_rate(fn, iterations: int, repeats: int) -> float:
    """Calls per second of ``fn``: the best of ``repeats`` rounds."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = CLOCK()
        for _ in range(iterations):
            fn()
        best = min(best, CLOCK() - start)
    return iterations / best


def random_batch(T: int, rng: np.random.Generator) -> SamplesToBuffer:
    return SamplesToBuffer(
        observation=rng.standard_normal((T, ENVS, OBS_DIM), dtype=np.float32),
        action=rng.integers(0, 6, size=(T, ENVS)),
        reward=rng.standard_normal((T, ENVS), dtype=np.float32),
        done=rng.random((T, ENVS)) < 0.01,
    )


# ----- (b) prioritized replay throughput -----


def bench_rlpyt(capacity: int, iterations: int, repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    np.random.seed(0)
    example = random_batch(1, rng)[0, 0]
    buf = PrioritizedReplayBuffer(example, capacity, ENVS, discount=0.99, alpha=ALPHA, beta=BETA)
    fill = random_batch(min(buf.T, 4096), rng)
    while buf.count < buf.T:  # Full buffer: every op works at full size.
        buf.append_samples(fill[:min(len(fill.reward), buf.T - buf.count)])
    add = random_batch(ADD_T, rng)
    rates = {"add (transitions/s)": ADD_T * ENVS * best_rate(
        lambda: buf.append_samples(add), iterations, repeats)}
    for batch_B in (32, 256):
        priorities = rng.random(batch_B) + 0.1
        rates[f"sample {batch_B} (batches/s)"] = best_rate(
            lambda b=batch_B: buf.sample_batch(b), iterations, repeats)
        buf.sample_batch(batch_B)
        rates[f"update {batch_B} (batches/s)"] = best_rate(
            lambda p=priorities: buf.update_batch_priorities(p), iterations, repeats)
    return rates


def bench_torchrl(capacity: int, iterations: int, repeats: int) -> dict[str, float] | str:
    """TorchRL's PrioritizedReplayBuffer on the same data, or why it could not run."""
    try:
        from tensordict import TensorDict
        from torchrl.data import LazyTensorStorage
        from torchrl.data import PrioritizedReplayBuffer as TorchRlPrb

        def tensordict(batch: SamplesToBuffer, n: int) -> TensorDict:
            fields = {k: torch.as_tensor(np.asarray(v).reshape((n,) + np.shape(v)[2:]))
                      for k, v in batch.items()}
            return TensorDict(fields, batch_size=[n])

        rng = np.random.default_rng(0)
        torch.manual_seed(0)
        rb = TorchRlPrb(alpha=ALPHA, beta=BETA, storage=LazyTensorStorage(capacity))
        fill = tensordict(random_batch(4096 // ENVS, rng), 4096)
        for _ in range(capacity // 4096 + 1):
            rb.extend(fill)
        add = tensordict(random_batch(ADD_T, rng), ADD_T * ENVS)
    except Exception as error:  # ImportError, or a binary extension built for another torch.
        first_line = str(error).splitlines()[0].replace(" See warning above.", "")
        return f"{type(error).__name__}: {first_line[:120]}{_extension_error()}"
    rates = {"add (transitions/s)": ADD_T * ENVS * best_rate(
        lambda: rb.extend(add), iterations, repeats)}
    for batch_B in (32, 256):
        priorities = torch.as_tensor(rng.random(batch_B) + 0.1)
        rates[f"sample {batch_B} (batches/s)"] = best_rate(
            lambda b=batch_B: rb.sample(b, return_info=True), iterations, repeats)
        _, info = rb.sample(batch_B, return_info=True)
        index = info["index"]
        rates[f"update {batch_B} (batches/s)"] = best_rate(
            lambda i=index, p=priorities: rb.update_priority(i, p), iterations, repeats)
    return rates


def _extension_error() -> str:
    """Why TorchRL's C++ extension (its sum tree) does not load, if it does not."""
    try:
        import torchrl._torchrl  # noqa: F401
    except ModuleNotFoundError:  # torchrl itself missing: the first message says so.
        pass
    except ImportError as error:
        symbol = "undefined symbol" in str(error)
        why = "built for another torch version" if symbol else str(error)[:120]
        return f" (torchrl._torchrl: {why}; torch here is {torch.__version__})"
    return ""


def report_throughput(capacity: int, iterations: int, repeats: int) -> None:
    clock = "CPU" if CLOCK is time.process_time else "wall"
    print(f"(b) Prioritized replay, capacity {capacity:,}, B={ENVS}, obs {OBS_DIM} float32, "
          f"alpha={ALPHA}, beta={BETA}; best of {repeats} x {iterations} calls, {clock} time")
    ours = bench_rlpyt(capacity, iterations, repeats)
    peer = bench_torchrl(capacity, iterations, repeats)
    if isinstance(peer, str):
        print(f"    TorchRL peer skipped: {peer}")
        peer = {}
    print(f"    {'operation':<26}{'rlpyt':>14}{'TorchRL':>14}{'ratio':>9}")
    for op, rate in ours.items():
        other = peer.get(op)
        ratio = f"{rate / other:>8.2f}x" if other else f"{'-':>9}"
        other_text = f"{other:>14,.0f}" if other else f"{'-':>14}"
        print(f"    {op:<26}{rate:>14,.0f}{other_text}{ratio}")


# ----- (c) frame-buffer bytes per transition -----


def report_frame_bytes(size: int = 20_000) -> None:
    frame_shape, n_frames = (104, 80), 4
    frame_bytes = int(np.prod(frame_shape))
    example = SamplesToBuffer(np.zeros((n_frames,) + frame_shape, np.uint8), np.int64(0),
                              np.float32(0), False)
    print(f"(c) Bytes per transition, Pong observations {n_frames}x{frame_shape[0]}x"
          f"{frame_shape[1]} uint8 (one frame = {frame_bytes:,} B), B={ENVS}")
    for n_step in (1, 3):
        frames = UniformReplayFrameBuffer(example, size, ENVS, discount=0.99,
                                          n_step_return=n_step)
        stacks = UniformReplayBuffer(example, size, ENVS, discount=0.99, n_step_return=n_step)
        per_frame = frames.nbytes / size
        per_stack = stacks.nbytes / size
        # Allocated lazily by the OS: nothing is touched, so 1M costs no real memory here.
        million = UniformReplayFrameBuffer(example, 1_000_000, ENVS, discount=0.99,
                                           n_step_return=n_step).nbytes
        print(f"    n_step_return={n_step}: frame buffer {per_frame:,.1f} B "
              f"({per_frame / frame_bytes:.4f} x one frame), full stacks {per_stack:,.1f} B; "
              f"full / frame = {per_stack / per_frame:.2f}x")
        print(f"      1M transitions: frame buffer {million / 1e9:.3f} GB = "
              f"{million / (1e6 * frame_bytes):.4f} x one frame each; full stacks "
              f"{per_stack * 1e6 / 1e9:.2f} GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    report_throughput(args.capacity, args.iterations, args.repeats)
    print()
    report_frame_bytes()


if __name__ == "__main__":
    main()
