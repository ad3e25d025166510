"""Predicting a large input chunk by chunk (``Tagger.predict_stream``, what ``entangle predict``
does) against all at once (``Tagger.predict``): the process's peak memory and the time, each
variant in a fresh process. The model's forward pass is replaced by zero logits of the shape it
returns, so both measure the host's share (featurizing, batching, stitching, decoding): the model's
own memory is the same at any input size. Also what sorting by length within a chunk costs: the
padded positions of each side (characters, subwords) over the real ones, for chunks of several
sizes against sorting the whole input (WNUT-17 and CoNLL-03, every split, shuffled).

    python benchmarks/streaming.py MODEL_DIR --repeat 40 --output benchmarks/results/streaming.json
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from types import SimpleNamespace

import torch

from entangle import predict as predict_module
from entangle.data.batching import inference_batches
from entangle.data.corpus import load_corpus
from entangle.predict import Tagger


def wnut17_test(repeat: int) -> list[list[str]]:
    return [s.words for s in load_corpus("wnut17", splits=("test",)).test] * repeat


def measure(model: str, variant: str, repeat: int, batch_size: int) -> dict:
    """One variant in this process: its peak memory above what loading left, and its time."""
    torch.set_num_threads(1)
    tagger = Tagger.from_pretrained(model, device="cpu", batch_size=batch_size)
    sentences = wnut17_test(repeat)
    n_labels = tagger.model.config.num_labels

    def zero_logits(**inputs):
        starts = inputs["subword_word_starts"] if "subword_word_starts" in inputs else inputs["char_word_starts"]
        return SimpleNamespace(**{f"{side}_logits": torch.zeros(*starts.shape, n_labels) for side in inputs["sides"]})

    tagger._inference_forward = lambda: zero_logits
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    predictions = tagger.predict(sentences) if variant == "whole" else tagger.predict_stream(sentences)
    words = sum(len(p.labels) for p in predictions)  # consumed as it comes, as `entangle predict` does
    seconds = time.perf_counter() - start
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KB on Linux
    return {"sentences": len(sentences), "words": words, "peak_memory_growth_mb": round(grown / 1024, 1),
            "seconds": round(seconds, 2), "words_per_s": round(words / seconds)}


def padding(model: str, batch_sizes: list[int], chunk_batches: list[int]) -> dict:
    tagger = Tagger.from_pretrained(model, device="cpu")
    corpora = [load_corpus(name) for name in ("wnut17", "conll2003")]
    sentences = [s.words for corpus in corpora for split in (corpus.train, corpus.dev, corpus.test) for s in split]
    random.Random(0).shuffle(sentences)
    windows = tagger.featurizer.featurize(sentences)
    real = {"chars": sum(len(w.char_ids) for w in windows), "subwords": sum(len(w.subword_ids) for w in windows)}
    result = {"sentences": len(sentences), "windows": len(windows), "padded_over_real": {}}
    for batch_size in batch_sizes:
        for chunk in [None, *chunk_batches]:
            size = len(windows) if chunk is None else chunk * batch_size
            padded = {"chars": 0, "subwords": 0}
            for begin in range(0, len(windows), size):  # each chunk batched as Tagger batches it
                for _, batch in inference_batches(windows[begin : begin + size], batch_size, tagger.collator):
                    padded["chars"] += batch["char_ids"].numel()
                    padded["subwords"] += batch["subword_ids"].numel()
            name = f"batch {batch_size}, " + ("the whole input" if chunk is None else f"chunks of {chunk} batches")
            result["padded_over_real"][name] = {side: round(padded[side] / real[side], 4) for side in real}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--repeat", type=int, default=40, help="WNUT-17 test this many times over")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--variant", choices=["whole", "stream"], help="(internal) measure one variant here")
    parser.add_argument("--output")
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(measure(args.model, args.variant, args.repeat, args.batch_size)))
        return
    runs = {}
    for variant in ("whole", "stream"):
        command = [sys.executable, __file__, args.model, "--variant", variant, "--repeat", str(args.repeat),
                   "--batch-size", str(args.batch_size)]
        runs[variant] = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    result = {"command": "python benchmarks/streaming.py MODEL_DIR " + " ".join(sys.argv[2:]),
              "model": args.model, "batch_size": args.batch_size, "stream_batches": predict_module.STREAM_BATCHES,
              "host_only": "the model's forward pass replaced by zero logits", "runs": runs,
              "padding": padding(args.model, [32, 128], [predict_module.STREAM_BATCHES, 64, 16])}
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as file:
            file.write(text + "\n")


if __name__ == "__main__":
    main()
