"""Training steps of the default model in eager PyTorch against ``torch.compile`` (issue #27).

On an H100 a training step of m=2 at batch 32 is bound by the host, which launches each small
kernel (session 39: the GPU busy 1.4 s of a 26 s profiled run), so bf16's faster matrix products
do not show. A compiled model fuses element-wise work into fewer kernels. This measures what that
gives and costs on the CPU: the same WNUT-17 batches (length-grouped, as training draws them)
through the eager model and its compiled form, which share their weights, steps alternating so that
a change in the machine's load hits both alike; and the compiled form's first pass, which compiles.
On the GPU when there is one (``--device``), optionally under bf16 autocast (``--bf16``, as
``--mixed-precision bf16`` trains).

    python benchmarks/compile_training.py --threads 1 --output benchmarks/results/compile_training.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from entangle.data.batching import train_loader
from entangle.data.corpus import load_corpus
from entangle.modeling.kernels import attention_kernels
from entangle.options import DEFAULT_CHAR, DEFAULT_SUBWORD
from entangle.predict import Tagger
from entangle.training import adamw, parameter_groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=320, help="the first N WNUT-17 training sentences")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="timed passes over the batches, each mode")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--bf16", action="store_true", help="each step under torch.autocast in bfloat16")
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    corpus = load_corpus("wnut17", splits=("train",))
    tagger = Tagger.create(DEFAULT_CHAR, DEFAULT_SUBWORD, corpus.labels)  # entangle train's model defaults
    device = torch.device(args.device)
    model, label2id = tagger.model.to(device), tagger.model.config.label2id
    sentences = corpus.split("train")[: args.sentences]
    windows = tagger.featurizer.featurize([s.words for s in sentences], [[label2id[t] for t in s.tags] for s in sentences])
    batches = [{k: v.to(device) for k, v in batch.items()}
               for batch in train_loader(windows, args.batch_size, tagger.collator, torch.Generator().manual_seed(0))]
    optimizer = adamw(parameter_groups(model, 5e-5, 5e-4, 0.01))
    compiled = torch.compile(model, dynamic=True)
    model.train()

    def step(forward, batch) -> float:
        start = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16), attention_kernels(device):
            loss = forward(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    first: dict[str, list[float]] = {"eager": [step(model, b) for b in batches], "compiled": []}
    for i, batch in enumerate(batches):  # compiling: minutes, so say how far it got
        first["compiled"].append(step(compiled, batch))
        print(f"compiled, first pass: batch {i + 1}/{len(batches)}, {sum(first['compiled']):.1f} s", flush=True)
    times: dict[str, list[float]] = {"eager": [], "compiled": []}
    for _ in range(args.rounds):
        for batch in batches:
            times["eager"].append(step(model, batch))
            times["compiled"].append(step(compiled, batch))
    passes = {mode: [sum(t[i : i + len(batches)]) for i in range(0, len(t), len(batches))] for mode, t in times.items()}
    result = {
        "command": "python benchmarks/compile_training.py " + " ".join(
            f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in vars(args).items() if v is not False),
        "torch": torch.__version__, "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "threads": args.threads, "batches": len(batches),
        "shapes": sorted({tuple(b["subword_ids"].shape) + tuple(b["char_ids"].shape[1:]) for b in batches}),
        "first_pass_s": {mode: round(sum(t), 2) for mode, t in first.items()},
        "pass_s": {mode: [round(p, 2) for p in ps] for mode, ps in passes.items()},
        "median_step_s": {mode: round(statistics.median(t), 4) for mode, t in times.items()},
    }
    result["speed_up"] = round(statistics.median(passes["eager"]) / statistics.median(passes["compiled"]), 3)
    with open(args.output, "w") as file:
        json.dump(result, file, indent=2)
    print(json.dumps({k: v for k, v in result.items() if k != "shapes"}, indent=1))


if __name__ == "__main__":
    main()
