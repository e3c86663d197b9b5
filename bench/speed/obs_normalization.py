"""Time of the input normalization's statistics update on a batch of Atari frames.

``RunningMeanStdModel.update`` takes an integer batch's moments in float32 and combines
them in float64; the reference here is the float64 path it replaced (a float64 copy of
every pixel).  Each side is timed with glibc's malloc defaults and with the learner's
freed memory kept (``rlpyt.utils.malloc``), each in a fresh process; rounds alternate
the two paths; medians are printed with their ratio.

    python bench/speed/obs_normalization.py --frames 320 --rounds 3
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

frames, rounds, kept = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "kept"
torch.set_num_threads(2)
if kept:
    keep_freed_memory()


class Float64Reference(RunningMeanStdModel):
    @torch.no_grad()
    def update(self, x):
        batch = x.reshape(-1, *self.shape).to(self.mean)
        count = torch.tensor(float(batch.shape[0]), dtype=torch.float64)
        mean = batch.sum(0) / count
        self._combine(count, mean, ((batch - mean) ** 2).sum(0))


x = torch.randint(0, 256, (frames, 4, 84, 84), dtype=torch.uint8)
models = dict(now=RunningMeanStdModel((4, 84, 84)), float64=Float64Reference((4, 84, 84)))
times = {name: [] for name in models}
for _ in range(rounds):
    for name, model in models.items():
        for _ in range(10):
            start = time.perf_counter()
            model.update(x)
            times[name].append(time.perf_counter() - start)
gap = (models["now"].var - models["float64"].var).abs().max() / models["float64"].var.max()
print(json.dumps(dict(times, relative_gap=float(gap))))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=320, help="frames a batch (default 320)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of 10 updates (default 3)")
    a = p.parse_args()
    for malloc in ("glibc defaults", "kept"):
        out = subprocess.run([sys.executable, "-c", CHILD, str(a.frames), str(a.rounds),
                              "kept" if malloc == "kept" else "defaults"],
                             capture_output=True, text=True, check=True)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        now, ref = (statistics.median(res[k]) * 1e3 for k in ("now", "float64"))
        print(f"malloc {malloc}: {now:.1f} ms now, {ref:.1f} ms float64 path; "
              f"float64 / now = {ref / now:.2f}x; variance gap {res['relative_gap']:.1e} "
              f"relative ({a.frames} frames, medians of {a.rounds * 10})")


if __name__ == "__main__":
    main()
