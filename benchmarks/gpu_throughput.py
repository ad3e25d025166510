"""Inference throughput of a model on WNUT-17 test: the model alone (windows featurized and
batched beforehand, only the forward passes timed, on the device) against ``Tagger.probabilities``
end to end (featurizing, batching, forward, stitching), in float32 and under bf16 autocast,
passes alternating so that a change in the machine's load hits all alike. Issue #27's GPU
target: end to end at least 2/3 of the model's throughput at batch 128; bf16 no slower than
float32. Runs on whatever ``--device`` is (default: the GPU when there is one). End to end, the
input is featurized in this process (``Tagger``'s default); a pass with it featurized by
``--workers`` worker processes is timed beside the others (session 39: 0.29 of the model's
throughput with four, 0.31 without; session 51: 0.33 and 0.37). Passes without the model split
the host's share of an end-to-end pass: featurizing alone; featurizing, batching and copying each
batch to the device; and the workers' batches alone, made and received.

    python benchmarks/gpu_throughput.py MODEL_DIR --batch-size 128 --output throughput.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from entangle.data.batching import featurized_batches, inference_batches
from entangle.data.corpus import load_corpus
from entangle.modeling.kernels import attention_kernels
from entangle.predict import AUTOCAST_DTYPES, Tagger, batch_to_device


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def model_pass(tagger: Tagger, batches: list[dict], side: str) -> None:
    device, dtype = tagger.model.device, AUTOCAST_DTYPES[tagger.autocast]
    # The attention kernels Tagger uses: under bf16 PyTorch would otherwise pick cuDNN's here.
    with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype is not None), \
            attention_kernels(device):
        for batch in batches:
            tagger.model(**batch, sides=(side,))
    synchronize(device)


def host_pass(tagger: Tagger, sentences: list[list[str]], to_device: bool) -> None:
    """What an end-to-end pass does besides the model: featurizing, then (``to_device``) batching
    and copying each batch to the device as ``Tagger`` does."""
    windows = tagger.featurizer.featurize(sentences)
    if to_device:
        for _, batch in inference_batches(windows, tagger.batch_size, tagger.collator):
            batch_to_device(batch, tagger.model.device)
        synchronize(tagger.model.device)


def workers_pass(tagger: Tagger, sentences: list[list[str]]) -> None:
    """The featurizing workers' part alone: their batches made and received, none run or copied
    (session 51: end to end with four workers was slower than featurizing in the process)."""
    for _ in featurized_batches(sentences, tagger.featurizer, tagger.collator, tagger.batch_size,
                                tagger.featurize_workers):
        pass


def end_to_end_pass(tagger: Tagger, sentences: list[list[str]], side: str) -> None:
    tagger.probabilities(sentences, (side,))
    synchronize(tagger.model.device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--sentences", type=int, help="the first N test sentences (default: all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=1,
                        help="the sentences this many times over: workers start once a pass, so a longer input shows their steady state")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workers", type=int, default=4, help="featurizing processes of the pass that uses them")
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    sentences = [s.words for s in load_corpus("wnut17", splits=("test",)).test[: args.sentences]] * args.repeat
    words = sum(map(len, sentences))
    taggers = {precision: Tagger.from_pretrained(args.model, device=args.device, batch_size=args.batch_size,
                                                 autocast=None if precision == "float32" else precision)
               for precision in ("float32", "bf16")}
    side = taggers["float32"].model.config.predict_side
    device = taggers["float32"].model.device
    reference = taggers["float32"]
    batches = [{k: v.to(device) for k, v in batch.items()} for _, batch in
               inference_batches(reference.featurizer.featurize(sentences), args.batch_size, reference.collator)]
    passes = {f"{kind} {precision}": (lambda t=tagger, k=kind: model_pass(t, batches, side) if k == "model"
                                      else end_to_end_pass(t, sentences, side))
              for precision, tagger in taggers.items() for kind in ("model", "end to end")}
    # The same float32 model with the input featurized by worker processes, to see what they give.
    workers = Tagger(reference.model, reference.tokenizer, batch_size=args.batch_size, featurize_workers=args.workers)
    passes[f"end to end float32, {args.workers} featurizing workers"] = lambda: end_to_end_pass(workers, sentences, side)
    passes["host: featurizing"] = lambda: host_pass(reference, sentences, to_device=False)
    passes["host: featurizing, batching, copying to the device"] = lambda: host_pass(reference, sentences, to_device=True)
    passes[f"host: featurizing and batching in {args.workers} workers"] = lambda: workers_pass(workers, sentences)
    times: dict[str, list[float]] = {name: [] for name in passes}
    for run in passes.values():  # warm-up: kernels chosen, caches filled
        run()
    for _ in range(args.rounds):
        for name, run in passes.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    rows = {name: {"median_s": statistics.median(t), "words_per_s": words / statistics.median(t), "passes_s": t}
            for name, t in times.items()}
    for name, row in rows.items():
        if name.startswith("end to end"):
            precision = "bf16" if "bf16" in name else "float32"
            row["share_of_model"] = row["words_per_s"] / rows[f"model {precision}"]["words_per_s"]
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    result = {"model": args.model, "device": device_name, "batch_size": args.batch_size, "sentences": len(sentences),
              "words": words, "repeat": args.repeat, "side": side, "rounds": args.rounds,
              "featurize_workers": args.workers, "torch": torch.__version__, "passes": rows}
    with open(args.output, "w") as file:
        json.dump(result, file, indent=2)
    for name, row in rows.items():
        share = f" ({row['share_of_model']:.2f} of the model's)" if "share_of_model" in row else ""
        print(f"{name}: {row['words_per_s']:.0f} words/s{share}")


if __name__ == "__main__":
    main()
