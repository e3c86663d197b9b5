"""Time of the input normalization on batches of Atari frames: its statistics update
and its forward pass.

``RunningMeanStdModel.update`` takes an 8-bit batch's moments from exact sums, summed in
chunks of 64 rows; the references are the two paths it replaced, float32 moments in two
passes over the whole batch and a float64 copy of every pixel.  ``forward`` makes one
new tensor and works in place; the reference makes a new tensor per operation.  Each
side is timed with glibc's malloc defaults and with the learner's freed memory kept
(``rlpyt.utils.malloc``), each in a fresh process, on one torch thread (a learner's on
2 cores); rounds alternate the paths; medians are printed with their ratio.

    python bench/speed/obs_normalization.py --frames 1024 --minibatch 256 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time, torch
from rlpyt.models.running_mean_std import RunningMeanStdModel
from rlpyt.utils.malloc import keep_freed_memory

frames, minibatch, rounds, kept = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                   sys.argv[4] == "kept")
torch.set_num_threads(1)
if kept:
    keep_freed_memory()


class Float64Update(RunningMeanStdModel):
    @torch.no_grad()
    def update(self, x):
        batch = x.reshape(-1, *self.shape).to(self.mean)
        count = torch.tensor(float(batch.shape[0]), dtype=torch.float64)
        mean = batch.sum(0) / count
        self._combine(count, mean, ((batch - mean) ** 2).sum(0))


class Float32TwoPassUpdate(RunningMeanStdModel):
    @torch.no_grad()
    def update(self, x):
        batch = x.reshape(-1, *self.shape).to(torch.float32)
        count = torch.tensor(float(batch.shape[0]), dtype=torch.float64)
        mean = batch.mean(0)
        self._combine(count, mean.double(), ((batch - mean) ** 2).sum(0).double())


def new_tensor_per_op(model, x):
    return ((x.float() - model.mean.float()) / model.std.float()).clamp(-5.0, 5.0)


x = torch.randint(0, 256, (frames, 4, 84, 84), dtype=torch.uint8)
models = dict(now=RunningMeanStdModel((4, 84, 84), clip=5.0),
              float32_two_pass=Float32TwoPassUpdate((4, 84, 84)),
              float64=Float64Update((4, 84, 84)))
forwards = dict(now=models["now"], new_tensor_per_op=lambda b: new_tensor_per_op(models["now"], b))
times = {f"update {name}": [] for name in models}
times.update({f"forward {name}": [] for name in forwards})
for _ in range(rounds):
    for name, model in models.items():
        for _ in range(10):
            start = time.perf_counter()
            model.update(x)
            times[f"update {name}"].append(time.perf_counter() - start)
    for name, forward in forwards.items():
        for i in range(10):
            rows = x[(i * minibatch) % frames:][:minibatch]
            start = time.perf_counter()
            forward(rows)
            times[f"forward {name}"].append(time.perf_counter() - start)
exact = models["float64"].var
gaps = {name: float((m.var - exact).abs().max() / exact.max()) for name, m in models.items()}
same = torch.equal(models["now"](x[:minibatch]), new_tensor_per_op(models["now"], x[:minibatch]))
print(json.dumps(dict(times=times, gaps=gaps, forward_identical=same)))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=1024,
                   help="frames of an update's batch (default 1024: the ppo preset's)")
    p.add_argument("--minibatch", type=int, default=256,
                   help="frames a forward pass normalizes (default 256)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of 10 calls (default 3)")
    a = p.parse_args()
    for malloc in ("glibc defaults", "kept"):
        out = subprocess.run([sys.executable, "-c", CHILD, str(a.frames), str(a.minibatch),
                              str(a.rounds), "kept" if malloc == "kept" else "defaults"],
                             capture_output=True, text=True, check=True)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        ms = {k: statistics.median(v) * 1e3 for k, v in res["times"].items()}
        print(f"malloc {malloc} (medians of {a.rounds * 10}):")
        now = ms["update now"]
        for ref in ("float32_two_pass", "float64"):
            print(f"  update of {a.frames} frames: {now:.1f} ms now, {ms['update ' + ref]:.1f} "
                  f"ms {ref}: {ms['update ' + ref] / now:.2f}x; variance gap to float64 "
                  f"{res['gaps']['now']:.1e} now, {res['gaps'][ref]:.1e} {ref}")
        now, ref = ms["forward now"], ms["forward new_tensor_per_op"]
        print(f"  forward of {a.minibatch} frames: {now:.1f} ms now, {ref:.1f} ms with a new "
              f"tensor per op: {ref / now:.2f}x; outputs identical: {res['forward_identical']}")


if __name__ == "__main__":
    main()
