"""``--part backends``: ``Tagger.probabilities`` from the subword side on WNUT-17 test with PyTorch
eager, ONNX Runtime (the model exported by ``entangle export-onnx``) and
``torch.compile(dynamic=True)``, batch 32 and 1, entangle m=2 and the subword encoder alone; one
process per system and batch size holds the three and alternates their passes (so a change in
the machine's load hits all three alike); export and compile times are reported apart.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from common import RESULTS_DIR, alternating_passes, machine_line, measure, tagger, test_words
from results_md import replace_section

RESULTS_JSON = RESULTS_DIR / "speed_backends.json"
SECTION = "speed-backends"
BACKENDS = ("eager", "onnx", "compile")


def export(system: str, directory: str) -> dict:
    from entangle.onnx_model import export_onnx

    model = tagger(system, 32)
    start = time.perf_counter()
    export_onnx(model, directory)
    return {"export_s": time.perf_counter() - start}


def backends(system: str, batch_size: int, n: int, onnx_dir: str, rounds: int = 3) -> dict:
    """Subword-side probabilities (what ``entangle predict`` computes) on each back end, in one
    process so that the passes can alternate (eager, onnx, compile, eager, ...): a change in the
    machine's load then hits every back end alike. Each back end's first two batches are a warm-up
    (``warmup_s``: for ``compile`` it includes compiling, with an empty compile cache); words/s is
    the median of ``rounds`` passes."""
    import os

    from entangle.predict import Tagger

    cache = tempfile.TemporaryDirectory(prefix="inductor-")  # a cold compile, as a user's first; removed on return
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache.name
    eager = tagger(system, batch_size)
    compiled = Tagger(eager.model, eager.tokenizer, batch_size, compile=True)  # torch.compile(dynamic=True)
    models = {"eager": eager, "onnx": Tagger.from_pretrained(onnx_dir, batch_size=batch_size), "compile": compiled}
    return alternating_passes(models, test_words("wnut17", n), 2 * batch_size, rounds, ("subword",))


#: what ``--one KIND ARGUMENTS`` runs in a child process, the arguments as strings
MEASUREMENTS = {"export": export, "backends": lambda s, b, n, d: backends(s, int(b), int(n), d)}


def measure_backends(args: argparse.Namespace) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for system in ("entangle m=2", "subword alone"):
            directory = str(Path(root) / system.replace(" ", "-"))
            exported = measure("export", system, directory)
            for batch, n in zip((32, 1), args.backend_sentences):
                measured = measure("backends", system, batch, n, directory) if "error" not in exported else exported
                rows.append({"system": system, "batch": batch, "sentences": n, "export_s": exported.get("export_s"),
                             **measured})
    return rows


def write_section(results: dict) -> None:
    lines = ["| system (subword side) | batch | eager words/s | ONNX Runtime words/s | torch.compile words/s | "
             "ONNX vs eager | compile vs eager | compile warm-up | peak memory (all three) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in results["backends"]:
        if "eager" not in row:
            lines.append(f"| {row['system']} | {row['batch']} | failed: {row.get('error', '?')} | | | | | | |")
            continue
        speed = {name: row[name]["words_per_s"] for name in BACKENDS}
        lines.append(f"| {row['system']} | {row['batch']} | {speed['eager']:.0f} | {speed['onnx']:.0f} | "
                     f"{speed['compile']:.0f} | {speed['onnx'] / speed['eager']:.2f}× | "
                     f"{speed['compile'] / speed['eager']:.2f}× | {row['compile']['warmup_s']:.0f} s | "
                     f"{row['peak_mb']:.0f} MB |")
    exports = {r["system"]: r["export_s"] for r in results["backends"] if r.get("export_s") is not None}
    if exports:
        lines += ["", "ONNX export (`entangle export-onnx`, its self-check included): "
                  + ", ".join(f"{system} {seconds:.0f} s" for system, seconds in exports.items()) + "."]
    replace_section(SECTION, machine_line(results) + "\n\n" + "\n".join(lines))
