"""Where a training run spends its time, op by op: ``entangle train`` under torch.profiler, the
ops with the most time of their own on the device (the CPU when there is no GPU) in a table.

Issue #27: on an H100, m=2 at batch 32 trained at 0.88x float32's speed under bf16 autocast
(target >= 1.5x). Profiling a short run in each precision shows whether the device or the host
bounds a step (the device's total time against the wall clock) and which ops bf16 makes slower.

    python benchmarks/gpu_profile.py --output profile.txt -- --data wnut17 -m 2 --batch-size 32 \\
        --max-steps 60 --patience 0 --mixed-precision bf16 --output runs/profile-bf16
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from entangle.cli import main as entangle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="append the table to this text file")
    parser.add_argument("--rows", type=int, default=25)
    parser.add_argument("train", nargs=argparse.REMAINDER, help="-- then the arguments of entangle train")
    args = parser.parse_args()
    train = args.train[1:] if args.train[:1] == ["--"] else args.train
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    start = time.perf_counter()
    with profile(activities=activities) as profiler:
        entangle(["train", *train])
    wall = time.perf_counter() - start
    events = profiler.key_averages()
    sort = "self_device_time_total" if cuda else "self_cpu_time_total"
    # The device's own events only (kernels, copies), as the table's total counts them: an op's
    # row repeats its kernels' time (session 39's header summed both and said 2.9 s for 1.4).
    device_s = sum(e.self_device_time_total for e in events if e.device_type == DeviceType.CUDA
                   and not e.is_user_annotation) / 1e6 if cuda else None
    header = f"## entangle train {' '.join(train)}\nwall {wall:.1f} s (profiled)" + (
        f"; device busy {device_s:.2f} s (its kernels' and copies' own time)" if cuda else "; no GPU")
    with Path(args.output).open("a") as out:
        out.write(f"{header}\n{events.table(sort_by=sort, row_limit=args.rows)}\n\n")
    print(header)


if __name__ == "__main__":
    main()
