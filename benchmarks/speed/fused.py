"""``--part fused``: operator fusion. The encoders alone and m=2 at widths 384, 128 and 64 (the
width part's systems and batches), eager and through ``torch.compile(dynamic=True)``, inference
and training passes alternating: does fusing the narrow co-attention's many small operations
remove the overhead that ``--part cost`` found not to be arithmetic?
"""

from __future__ import annotations

import os
import tempfile
from functools import partial

from common import RESULTS_DIR, alternating_timings, failed, machine_line, overhead_cell
from results_md import replace_section
from width import WidthSystems

RESULTS_JSON = RESULTS_DIR / "speed_fused.json"
SECTION = "speed-fused"
#: (co-attention width, heads) for ``--part fused``: the default and the two narrow widths whose
#: measured overhead ``--part cost`` found to be mostly not arithmetic
FUSED_WIDTHS = [(384, 12), (128, 4), (64, 4)]
MODES = ("eager", "compiled")


def fused_cost(n: int, steps: int, rounds: int = 3) -> dict:
    """Operator fusion as the lever for the narrow co-attention: the inference and training passes
    of ``WidthSystems`` (encoders alone, m=2 at ``FUSED_WIDTHS``) eager and through
    ``torch.compile(dynamic=True)``, all alternating in this process (``alternating_timings``), so
    that each mode's overhead is against the two encoders alone in the same mode. The warm-up of a
    compiled pass includes compiling with an empty cache."""
    cache = tempfile.TemporaryDirectory(prefix="inductor-")  # a cold compile, as a user's first; removed on return
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache.name
    bench = WidthSystems(n, steps, FUSED_WIDTHS, levers=False)
    bench.compile()
    rows = alternating_timings({name: {f"{kind}_{mode}": partial(getattr(bench, kind), name, compiled=mode == "compiled")
                                       for mode in MODES for kind in ("infer", "train")} for name in bench.models}, rounds)
    words = sum(map(len, bench.test))
    for row in rows.values():
        for kind in ("infer", "train"):
            row[f"{kind}_compile_speedup"] = row[f"{kind}_eager_s"] / row[f"{kind}_compiled_s"]
        for mode in MODES:
            row[f"infer_{mode}_words_per_s"] = words / row[f"infer_{mode}_s"]
            row[f"train_{mode}_steps_per_s"] = len(bench.train_batches) / row[f"train_{mode}_s"]
    return {"systems": rows, "sentences": len(bench.test), "words": words, "train_steps": len(bench.train_batches),
            "rounds": rounds}


#: what ``--one KIND ARGUMENTS`` runs in a child process, the arguments as strings
MEASUREMENTS = {"fused": lambda n, steps: fused_cost(int(n), int(steps))}


def write_section(results: dict) -> None:
    if failed(results, "fused", SECTION):
        return
    fused = results["fused"]

    lines = ["| system | mode | inference words/s (batch 32) | inference overhead vs char + subword alone | "
             "training steps/s (batch 16) | step overhead vs char + subword alone | warm-up (inference / training) |",
             "|---|---|---|---|---|---|---|"]
    for name, row in fused["systems"].items():
        for mode in MODES:
            lines.append(f"| {name} | {mode} | {row[f'infer_{mode}_words_per_s']:.0f} | "
                         f"{overhead_cell(name, row, f'infer_{mode}')} | {row[f'train_{mode}_steps_per_s']:.2f} | "
                         f"{overhead_cell(name, row, f'train_{mode}')} | {row[f'infer_{mode}_warmup_s']:.0f} s / "
                         f"{row[f'train_{mode}_warmup_s']:.0f} s |")
    lines += ["", "| system | compile speed-up, inference | compile speed-up, training |", "|---|---|---|"]
    lines += [f"| {name} | {row['infer_compile_speedup']:.2f}× | {row['train_compile_speedup']:.2f}× |"
              for name, row in fused["systems"].items()]
    lines += ["", f"{fused['sentences']} WNUT-17 test sentences ({fused['words']} words) per inference pass "
              f"(subword-side prediction), {fused['train_steps']} training batches per training pass (both heads, "
              f"fused AdamW); compiled: `torch.compile(dynamic=True)`, sharing the eager model's weights; median of "
              f"{fused['rounds']} alternating passes after the warm-up (compiling, with an empty cache, for the "
              f"compiled mode). Overheads are against the two encoders alone in the same mode. Peak memory of "
              f"the process (all models): {fused.get('peak_mb', 0):.0f} MB."]
    replace_section(SECTION, machine_line(results) + "\n\n" + "\n".join(lines))
