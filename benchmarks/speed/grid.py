"""``--part grid``: every system of ``SYSTEMS`` on the embedded defaults, one process per measurement.

- inference: ``Tagger.probabilities`` end to end (featurizing, batching, forward, stitching) on
  the first ``--sentences`` test sentences of WNUT-17 and CoNLL-03, batch 1 and 32;
- training: optimizer steps/s at batch 16 on WNUT-17 train windows, and the data pipeline's
  share of a step (featurizing and collating, per batch);
- fixed padding: m=2 inference on WNUT-17 test with every batch padded to 2048 characters and
  512 subwords (the authors' code) against dynamic padding, same batches;
- scaling: one co-attention module (both sides) against the number of characters at 64
  subwords, and against the number of subwords at 256 characters;
- levers, each beside its reference in the same run: predicting from one side (the other
  side's last co-attention module is skipped), the for-loop AdamW that training used before the
  fused one.
"""

from __future__ import annotations

import argparse
import time

from common import RESULTS_DIR, SYSTEMS, cell, measure, tagger, test_words, training_windows
from results_md import replace_section

RESULTS_JSON = RESULTS_DIR / "speed.json"
SECTION = "speed"


def infer(system: str, dataset: str, batch_size: int, n: int) -> dict:
    """``SYSTEM`` or ``SYSTEM, subword side only`` (the other side's last module skipped)."""
    system, _, only = system.partition(", ")
    sides = ("subword",) if only else None
    model = tagger(system, batch_size)
    sentences = test_words(dataset, n)
    model.probabilities(sentences[:batch_size], sides)  # warm-up
    start = time.perf_counter()
    model.probabilities(sentences, sides)
    seconds = time.perf_counter() - start
    return {"sentences_per_s": len(sentences) / seconds, "words_per_s": sum(map(len, sentences)) / seconds}


def train(system: str, steps: int) -> dict:
    """``SYSTEM`` (trained as ``entangle train`` does, fused AdamW) or ``SYSTEM, for-loop AdamW``."""
    import torch

    from entangle.data.batching import train_loader
    from entangle.data.corpus import load_corpus
    from entangle.training import adamw, parameter_groups

    system, _, lever = system.partition(", ")
    corpus = load_corpus("wnut17", splits=("train",))
    model = tagger(system, 16, corpus.labels)
    start = time.perf_counter()
    windows = training_windows(model, corpus.split("train"))
    featurize_s = time.perf_counter() - start
    loader = train_loader(windows, 16, model.collator, torch.Generator().manual_seed(0))
    groups = parameter_groups(model.model, 5e-5, 5e-4, 0.01)
    optimizer = torch.optim.AdamW(groups) if lever else adamw(groups)
    model.model.train()
    batches = iter(loader)
    collate_s, step_s, cpu_s = 0.0, [], 0.0
    for step in range(steps + 2):  # two warm-up steps
        start, cpu_start = time.perf_counter(), time.process_time()
        batch = next(batches)  # collating happens here
        collated = time.perf_counter()
        loss = model.model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step >= 2:
            collate_s += collated - start
            step_s.append(time.perf_counter() - start)
            cpu_s += time.process_time() - cpu_start
    per_batch_pipeline = featurize_s / len(loader) + collate_s / steps
    # CPU seconds are what a step costs when other processes compete for the cores (wall time grows, these do not).
    return {"steps_per_s": steps / sum(step_s), "steps_per_cpu_s": steps / cpu_s,
            "pipeline_share": per_batch_pipeline / (sum(step_s) / steps)}


def fixed_padding(n: int) -> dict:
    import torch
    import torch.nn.functional as F

    from entangle.data.batching import inference_batches

    model = tagger("entangle m=2", 32)
    windows = model.featurizer.featurize(test_words("wnut17", n))
    batches = [batch for _, batch in inference_batches(windows, 32, model.collator)]
    fixed = []
    for batch in batches:
        padded = dict(batch)
        for key, length, value in (("char_ids", 2048, 0), ("char_mask", 2048, 0),
                                   ("subword_ids", 512, model.tokenizer.pad_token_id), ("subword_mask", 512, 0)):
            padded[key] = F.pad(batch[key], (0, length - batch[key].shape[1]), value=value)
        fixed.append(padded)
    model.model.eval()
    times = {}
    with torch.inference_mode():
        for name, inputs in (("dynamic", batches), ("fixed", fixed)):
            model.model(**inputs[0])  # warm-up
            start = time.perf_counter()
            for batch in inputs:
                model.model(**batch)
            times[name] = time.perf_counter() - start
    return {"dynamic_s": times["dynamic"], "fixed_s": times["fixed"], "ratio": times["fixed"] / times["dynamic"],
            "batches": len(batches)}


def scale(chars: int, subwords: int) -> dict:
    import torch

    from entangle.modeling.coattention import CoAttentionStack

    # The embedded defaults' co-attention: MiniLM's width and heads, feed-forward 4x.
    stack = CoAttentionStack(1, hidden_size=384, num_heads=12, intermediate_size=1536, dropout=0.0,
                             attention_dropout=0.0, layer_norm_eps=1e-12).eval()
    h_c, h_s = torch.randn(1, chars, 384), torch.randn(1, subwords, 384)
    m_c, m_s = torch.ones(1, chars, dtype=torch.bool), torch.ones(1, subwords, dtype=torch.bool)
    with torch.inference_mode():
        stack(h_c, m_c, h_s, m_s)
        start = time.perf_counter()
        for _ in range(3):
            stack(h_c, m_c, h_s, m_s)
    return {"seconds": (time.perf_counter() - start) / 3}


#: what ``--one KIND ARGUMENTS`` runs in a child process, the arguments as strings
MEASUREMENTS = {"infer": lambda s, d, b, n: infer(s, d, int(b), int(n)), "train": lambda s, n: train(s, int(n)),
                "fixed": lambda n: fixed_padding(int(n)), "scale": lambda c, s: scale(int(c), int(s))}


def measure_grid(args: argparse.Namespace) -> dict:
    results = {"inference": [], "training": [], "scaling": []}
    for dataset in ("wnut17", "conll2003"):
        for batch in (1, 32):
            for system in [*SYSTEMS, "entangle m=2, subword side only"]:
                results["inference"].append({"system": system, "dataset": dataset, "batch": batch,
                                             **measure("infer", system, dataset, batch, args.sentences)})
    for system in [*SYSTEMS, "entangle m=2, for-loop AdamW"]:
        results["training"].append({"system": system, **measure("train", system, args.train_steps)})
    results["fixed_padding"] = measure("fixed", args.fixed_sentences)
    for chars in (256, 512, 1024, 2048, 4096, 8192):
        results["scaling"].append({"chars": chars, "subwords": 64, **measure("scale", chars, 64)})
    for subwords in (64, 128, 256, 512, 1024, 2048):
        results["scaling"].append({"chars": 256, "subwords": subwords, **measure("scale", 256, subwords)})
    return results


def write_section(results: dict) -> None:
    inference = {(r["system"], r["dataset"], r["batch"]): r for r in results["inference"]}
    lines = ["| system | data | batch | sentences/s | words/s | peak memory | overhead vs char + subword alone |",
             "|---|---|---|---|---|---|---|"]
    for (system, dataset, batch), row in inference.items():
        overhead = ""
        parts = [inference.get(("char alone", dataset, batch)), inference.get(("subword alone", dataset, batch))]
        if system.startswith("entangle") and "sentences_per_s" in row and all(p and "sentences_per_s" in p for p in parts):
            floor = sum(1 / p["sentences_per_s"] for p in parts)  # seconds per sentence of the two encoders
            overhead = f"{100 * (1 / row['sentences_per_s'] / floor - 1):+.0f}%"
        lines.append(f"| {system} | {dataset} | {batch} | {cell(row, 'sentences_per_s', '.1f')} | "
                     f"{cell(row, 'words_per_s', '.0f')} | {cell(row, 'peak_mb', '.0f')} MB | {overhead} |")
    training = {r["system"]: r for r in results["training"]}
    lines += ["", "| system | training steps/s (batch 16) | data pipeline share of a step | peak memory | "
              "step overhead vs char + subword alone |", "|---|---|---|---|---|"]
    floor = None
    if all("steps_per_s" in training.get(s, {}) for s in ("char alone", "subword alone")):
        floor = 1 / training["char alone"]["steps_per_s"] + 1 / training["subword alone"]["steps_per_s"]
    for system, row in training.items():
        overhead = (f"{100 * (1 / row['steps_per_s'] / floor - 1):+.0f}%"
                    if floor and system.startswith("entangle") and "steps_per_s" in row else "")
        lines.append(f"| {system} | {cell(row, 'steps_per_s', '.2f')} | "
                     f"{(format(100 * row['pipeline_share'], '.1f') + '%') if 'pipeline_share' in row else ''} | "
                     f"{cell(row, 'peak_mb', '.0f')} MB | {overhead} |")
    fixed = results["fixed_padding"]
    if "ratio" in fixed:
        lines += ["", f"Fixed padding (2048 characters, 512 subwords per batch, as the authors' code) vs dynamic "
                  f"padding, entangle m=2 inference on {fixed['batches']} batches of 32 WNUT-17 test sentences: "
                  f"{fixed['fixed_s']:.1f} s vs {fixed['dynamic_s']:.1f} s, **{fixed['ratio']:.1f}×** slower "
                  f"(peak {fixed['peak_mb']:.0f} MB)."]
    else:
        lines += ["", f"Fixed padding: failed ({fixed.get('error')})."]
    lines += ["", "One co-attention module (both sides, width 384, 12 heads, FFN 1536), batch 1, forward:", "",
              "| characters | subwords | time | peak memory |", "|---|---|---|---|"]
    for row in results["scaling"]:
        lines.append(f"| {row['chars']} | {row['subwords']} | {cell(row, 'seconds', '.4f')} s | "
                     f"{cell(row, 'peak_mb', '.0f')} MB |")
    machine = results["machine"]
    replace_section(SECTION, f"Machine: {machine['cores']} cores, {machine['threads']} torch threads, torch "
                    f"{machine['torch']}, Python {machine['python']}. Produced by `{results['command'].strip()}`.\n\n"
                    + "\n".join(lines), heading="## Performance (issue #7)")
