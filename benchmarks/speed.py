"""What entanglement costs: throughput, memory and scaling of the embedded defaults on this machine.

Every measurement runs in its own process, so its peak memory (max RSS) is its own. Models are
built with the embedded defaults (built-in character encoder, all-MiniLM-L6-v2) and untrained
heads: speed does not depend on the weights' values.

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
  fused one;
- back ends (``--part backends``): ``Tagger.probabilities`` from the subword side on WNUT-17 test
  with PyTorch eager, ONNX Runtime (the model exported by ``entangle export-onnx``) and
  ``torch.compile(dynamic=True)``, batch 32 and 1, entangle m=2 and the subword encoder alone;
  one process per system and batch size holds the three and alternates their passes (so a change
  in the machine's load hits all three alike); export and compile times are reported apart;
- autocast (``--part autocast --autocast-models DIR ...``): trained models on WNUT-17 test in
  float32 and under bf16 and fp16 autocast (``Tagger(autocast=...)``), one process per model
  alternating the three (words/s at batch 32, median), and test F1 and agreement with the
  float32 predictions on the whole test set (fp16, several times slower on a CPU: speed only);
- the cost in operations (``--part cost``): floating-point operations of the width part's systems
  on its batches (``FlopCounterMode``) beside the overheads that part timed, and the share of
  inference time spent in the kernels doing that arithmetic: does arithmetic explain the overhead?
- operator fusion (``--part fused``): the encoders alone and m=2 at widths 384, 128 and 64 (the
  width part's systems and batches), eager and through ``torch.compile(dynamic=True)``, inference
  and training passes alternating: does fusing the narrow co-attention's many small operations
  remove the overhead that ``--part cost`` found not to be arithmetic?
- the listed levers one by one (``--part levers``): m=2 as ``predict`` and ``train`` run it
  beside the same model with one lever undone (batches in input order or not grouped by length,
  ``torch.no_grad`` or autograd instead of ``torch.inference_mode``, attention spelled out or
  with a float mask instead of ``scaled_dot_product_attention`` with a boolean one), passes
  alternating, each lever's logits checked against the reference's; the fused projections timed
  alone on the shapes a pass gives the co-attention;
- the paper's sizes (``--part paper-size``): random encoders of CANINE-s's and RoBERTa-base's
  size (``CanineConfig()``, ``RobertaConfig()`` defaults) with m=2, inference on a few batches:
  the time of the entanglement (projections, co-attention, heads) against the two encoders'.

    python benchmarks/speed.py                  # every part; each writes its JSON and its RESULTS section
    python benchmarks/speed.py --part backends  # one part: benchmarks/results/speed_backends.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from results_md import replace_section

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS_JSON = RESULTS_DIR / "speed.json"
SECTION = "speed"
#: part -> (JSON file, RESULTS.md section)
PARTS = {"grid": (RESULTS_JSON, SECTION), "backends": (RESULTS_DIR / "speed_backends.json", "speed-backends"),
         "paper-size": (RESULTS_DIR / "speed_paper_size.json", "speed-paper-size"),
         "width": (RESULTS_DIR / "speed_width.json", "speed-width"),
         "cost": (RESULTS_DIR / "speed_cost.json", "speed-cost"),
         "fused": (RESULTS_DIR / "speed_fused.json", "speed-fused"),
         "levers": (RESULTS_DIR / "speed_levers.json", "speed-levers"),
         "autocast": (RESULTS_DIR / "speed_autocast.json", "speed-autocast")}
PRECISIONS = (None, "bf16", "fp16")  # Tagger(autocast=...): float32, then the two half-precision types
#: timed but not scored on the whole test set: fp16 runs several times slower than float32 on a CPU
SPEED_ONLY = ("fp16",)
BACKENDS = ("eager", "onnx", "compile")
LABELS = ["O", "B-X", "I-X"]
#: (co-attention width, heads) for ``--part width``; 384 with 12 heads is the default (MiniLM's)
WIDTHS = [(384, 12), (192, 6), (128, 4), (64, 4)]
#: what ``--part width`` times per system: inference and training steps, in float32 and under bf16 autocast
KINDS = ("infer", "train", "infer_bf16", "train_bf16")
#: suffix of the systems of ``--part width`` trained with the for-loop AdamW instead of the fused one
LEVER = ", for-loop AdamW"
#: name -> Tagger.create options
SYSTEMS = {"char alone": dict(coattention_layers=0, side="char"),
           "subword alone": dict(coattention_layers=0, side="subword"),
           "entangle m=1": dict(coattention_layers=1), "entangle m=2": dict(coattention_layers=2),
           "entangle m=4": dict(coattention_layers=4), "CharBERT-style": dict(fusion="charbert")}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tagger(system: str, batch_size: int, labels: list[str] = LABELS):
    from entangle.predict import Tagger

    return Tagger.create("builtin", "minilm", labels, batch_size=batch_size, **SYSTEMS[system])


def test_words(dataset: str, n: int) -> list[list[str]]:
    from entangle.data.corpus import load_corpus

    return [s.words for s in load_corpus(dataset, task="tagging", splits=("test",)).split("test")[:n]]


def training_windows(model, sentences: list) -> list:
    """Labelled windows of tagged sentences for a ``Tagger``, the labels numbered by its config."""
    label2id = model.model.config.label2id
    return model.featurizer.featurize([s.words for s in sentences], [[label2id[t] for t in s.tags] for s in sentences])


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


def alternating_passes(taggers: dict, sentences: list[list[str]], warmup: int, rounds: int,
                       sides: tuple[str, ...] | None = None) -> dict:
    """``{name: {"warmup_s", "passes", "words_per_s"}}``: each tagger's probabilities on
    ``sentences``, the taggers' passes alternating (a change in the machine's load hits all
    alike) after a warm-up on the first ``warmup`` sentences; words/s is the median of ``rounds``."""
    import statistics

    words = sum(map(len, sentences))
    results = {}
    for name, model in taggers.items():
        start = time.perf_counter()
        model.probabilities(sentences[:warmup], sides)
        results[name] = {"warmup_s": time.perf_counter() - start, "passes": []}
    for _ in range(rounds):
        for name, model in taggers.items():
            start = time.perf_counter()
            model.probabilities(sentences, sides)
            results[name]["passes"].append(words / (time.perf_counter() - start))
    for row in results.values():
        row["words_per_s"] = statistics.median(row["passes"])
    return results


def autocast_cost(model_dir: str, batch_size: int, n: int, rounds: int = 3) -> dict:
    """A trained model in float32 and under each autocast type, sharing its weights: words/s on
    the first ``n`` WNUT-17 test sentences (passes alternating, median of ``rounds``), then test
    scores and agreement with float32 per trained side on the whole test set (not for ``SPEED_ONLY``)."""
    from entangle.data.corpus import load_corpus
    from entangle.predict import Tagger

    reference = Tagger.from_pretrained(model_dir, batch_size=batch_size)
    taggers = {precision: Tagger(reference.model, reference.tokenizer, batch_size, autocast=precision)
               for precision in PRECISIONS}
    test = load_corpus("wnut17", splits=("test",)).split("test")
    sentences = [s.words for s in test[:n]]
    rows = {(precision or "fp32"): row
            for precision, row in alternating_passes(taggers, sentences, batch_size, rounds).items()}
    predicted = {}
    for precision, tagger in taggers.items():
        if precision in SPEED_ONLY:
            continue
        metrics, predicted[precision] = tagger.evaluate(test, return_predictions=True)
        row = rows[precision or "fp32"]
        row["f1"] = {side: m["f1"] for side, m in metrics.items()}
        row["agreement"] = {side: _agreement(labels, predicted[None][side]) for side, labels in predicted[precision].items()}
    config = reference.model.config
    return {"model": model_dir, "m": config.num_coattention_layers, "side": config.side, "sentences": len(sentences),
            "words": sum(map(len, sentences)), "test_words": sum(len(s.words) for s in test), "precisions": rows}


def _agreement(labels: list[list[str]], reference: list[list[str]]) -> float:
    """Share of words whose label is the reference's."""
    pairs = [(a, b) for x, y in zip(labels, reference) for a, b in zip(x, y)]
    return sum(a == b for a, b in pairs) / len(pairs)


def paper_size(encoders: str, batch_size: int, n: int, rounds: int = 3) -> dict:
    """Forward time of each encoder alone and of the whole m=2 model (both heads) on the same batches
    (median of ``rounds`` passes)."""
    import statistics

    import torch
    from transformers import CanineConfig, CanineModel, RobertaConfig, RobertaModel

    from entangle.data.batching import inference_batches
    from entangle.modeling import EntangleForTokenClassification
    from entangle.modeling.encoders import load_char_encoder, load_subword_encoder
    from entangle.predict import Tagger

    subword, tokenizer = load_subword_encoder("minilm")
    if encoders == "embedded":
        char = load_char_encoder("builtin")
    else:
        # The paper's sizes, random weights; MiniLM's WordPiece tokenizer stands in for RoBERTa's BPE
        # (no download here): similar subwords per word.
        char = CanineModel(CanineConfig())
        subword = RobertaModel(RobertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                             max_position_embeddings=514))
    model, tokenizer = EntangleForTokenClassification.from_encoders(char, subword, LABELS, tokenizer=tokenizer,
                                                                    num_coattention_layers=2)
    model.eval()
    helper = Tagger(model, tokenizer, batch_size)
    batches = [b for _, b in inference_batches(helper.featurizer.featurize(test_words("wnut17", n)), batch_size,
                                               helper.collator)]
    parts = {"char_s": lambda b: model.entangle.char_encoder(input_ids=b["char_ids"], attention_mask=b["char_mask"]),
             "subword_s": lambda b: model.entangle.subword_encoder(input_ids=b["subword_ids"],
                                                                   attention_mask=b["subword_mask"]),
             "model_s": lambda b: model(**b)}
    passes = {key: [] for key in parts}
    with torch.inference_mode():
        for run in parts.values():
            run(batches[-1])  # warm-up on the shortest batch
        for _ in range(rounds):  # alternating, so a change in the machine's load hits every part alike
            for key, run in parts.items():
                start = time.perf_counter()
                for batch in batches:
                    run(batch)
                passes[key].append(time.perf_counter() - start)
    times = {key: statistics.median(seconds) for key, seconds in passes.items()}
    encoders_s = times["char_s"] + times["subword_s"]
    return {**times, "passes": passes, "batches": len(batches),
            "entanglement_share": (times["model_s"] - encoders_s) / encoders_s,
            "parameters_m": sum(p.numel() for p in model.parameters()) / 1e6}


class WidthSystems:
    """The systems of the width part, built once on the same encoders, with one inference pass
    (batch 32, WNUT-17 test, subword-side prediction as ``predict`` does) and one training pass
    (batch 16, WNUT-17 train, both heads; fused AdamW as ``entangle train``) each. Beside them the
    optimizer lever: the subword encoder alone and m=2 at width 384 with the for-loop AdamW
    (``LEVER``) that training used before."""

    def __init__(self, n: int, steps: int, widths: list[tuple[int, int]] = WIDTHS, levers: bool = True,
                 variants: dict[str, dict] | None = None):
        """``variants``: the entanglement systems (name -> ``from_encoders`` options) instead of m=2
        at each of ``widths``."""
        import copy

        import torch

        from entangle.data.batching import inference_batches
        from entangle.data.corpus import load_corpus
        from entangle.modeling import EntangleForTokenClassification
        from entangle.modeling.encoders import load_char_encoder, load_subword_encoder
        from entangle.predict import Tagger
        from entangle.training import adamw, parameter_groups

        corpus = load_corpus("wnut17", splits=("train",))
        char, (subword, tokenizer) = load_char_encoder("builtin"), load_subword_encoder("minilm")
        systems = {"char alone": dict(num_coattention_layers=0, side="char"),
                   "subword alone": dict(num_coattention_layers=0, side="subword"),
                   **(variants if variants is not None else
                      {f"entangle m=2, width {w}": dict(num_coattention_layers=2, side="both", hidden_size=w,
                                                        num_attention_heads=h) for w, h in widths})}
        if levers:
            systems.update({name + LEVER: systems[name] for name in ("subword alone", "entangle m=2, width 384")})
        self.models = {name: EntangleForTokenClassification.from_encoders(
            copy.deepcopy(char), copy.deepcopy(subword), corpus.labels, tokenizer=tokenizer, **options)[0]
            for name, options in systems.items()}
        # Featurizes for every system alike: an entanglement model's batches hold both sides' inputs.
        helper = Tagger(next(model for name, model in self.models.items() if name.startswith("entangle")), tokenizer, 32)
        self.test = test_words("wnut17", n)
        self.infer_batches = [b for _, b in inference_batches(helper.featurizer.featurize(self.test), 32, helper.collator)]
        windows = training_windows(helper, corpus.split("train")[: 16 * steps])
        self.train_batches = [helper.collator(windows[i:i + 16]) for i in range(0, len(windows), 16)][:steps]
        self.optimizers = {name: (torch.optim.AdamW if name.endswith(LEVER) else adamw)(
            parameter_groups(model, 5e-5, 5e-4, 0.01)) for name, model in self.models.items()}

        self.compiled: dict = {}

    def compile(self) -> None:
        """A ``torch.compile(dynamic=True)`` copy of every system, sharing its weights and optimizer;
        ``infer``/``train`` with ``compiled=True`` run it (the first pass of each compiles)."""
        import torch

        self.compiled = {name: torch.compile(model, dynamic=True) for name, model in self.models.items()}

    def infer(self, name: str, bf16: bool = False, compiled: bool = False) -> None:
        import torch

        sides = ("char",) if name == "char alone" else ("subword",)
        model = (self.compiled if compiled else self.models)[name]
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            for batch in self.infer_batches:
                model(**{k: v for k, v in batch.items() if k != "labels"}, sides=sides)

    def train(self, name: str, bf16: bool = False, step: bool = True, compiled: bool = False) -> None:
        """``step=False``: forward and backward only, without the optimizer's update."""
        import torch

        model = (self.compiled if compiled else self.models)[name].train()
        for batch in self.train_batches:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):  # the forward pass, as Accelerate does
                loss = model(**batch).loss
            loss.backward()
            if step:
                self.optimizers[name].step()
            self.optimizers[name].zero_grad()
        model.eval()


def alternating_timings(runs: dict[str, dict[str, Callable[[], None]]], rounds: int) -> dict[str, dict]:
    """``{system: {key: pass}}`` timed side by side: a warm-up of each pass (``{key}_warmup_s``: a
    first training pass allocates the optimizer's state, a first compiled pass compiles), then
    ``rounds`` of every pass, alternating, so that a change in the machine's load hits all alike.
    Per system and key: the times (``passes``), their median (``{key}_s``) and, where both were
    timed, the overhead over the two encoders alone ("char alone" + "subword alone") on the same
    key (``{key}_overhead``)."""
    import statistics

    rows = {name: {"passes": {key: [] for key in passes}} for name, passes in runs.items()}
    for name, passes in runs.items():
        for key, run in passes.items():
            start = time.perf_counter()
            run()
            rows[name][f"{key}_warmup_s"] = time.perf_counter() - start
    for _ in range(rounds):
        for name, passes in runs.items():
            for key, run in passes.items():
                start = time.perf_counter()
                run()
                rows[name]["passes"][key].append(time.perf_counter() - start)
    for row in rows.values():
        row.update({f"{key}_s": statistics.median(times) for key, times in row["passes"].items()})
    floor = [rows[name] for name in ("char alone", "subword alone") if name in rows]
    for row in rows.values():
        for key in row["passes"]:
            if len(floor) == 2 and all(key in encoder["passes"] for encoder in floor):
                row[f"{key}_overhead"] = row[f"{key}_s"] / sum(encoder[f"{key}_s"] for encoder in floor) - 1
    return rows


def width_cost(n: int, steps: int, rounds: int = 5) -> dict:
    """The co-attention width lever (``WidthSystems``): inference and training passes of each
    encoder alone and of m=2 at each width in ``WIDTHS``, in float32 and under bf16 autocast, all
    in this process on the same batches, alternating over ``rounds`` (``alternating_timings``)."""
    bench = WidthSystems(n, steps)
    models, test, train_batches = bench.models, bench.test, bench.train_batches

    def run(name: str, kind: str) -> None:
        (bench.infer if kind.startswith("infer") else bench.train)(name, bf16=kind.endswith("bf16"))

    # A training lever (LEVER) is timed in float32 training only: its inference is its reference's.
    kinds = {name: KINDS[1:2] if name.endswith(LEVER) else KINDS for name in models}
    rows = alternating_timings({name: {kind: partial(run, name, kind) for kind in kinds[name]} for name in models}, rounds)
    words = sum(map(len, test))
    for name, row in rows.items():
        row["parameters_m"] = sum(p.numel() for p in models[name].parameters()) / 1e6
        for kind in kinds[name]:
            row[f"{kind}_per_s"] = (words if kind.startswith("infer") else len(train_batches)) / row[f"{kind}_s"]
        if name.endswith(LEVER):  # how much faster the fused AdamW makes the same training
            row["fused_speedup"] = row["train_s"] / rows[name.removesuffix(LEVER)]["train_s"]
    return {"systems": rows, "sentences": len(test), "words": words, "train_steps": len(train_batches), "rounds": rounds}


def flop_counter():
    """torch's ``FlopCounterMode``, taught the CPU kernels it does not count: flash attention and
    the oneDNN LSTM layer (batch first; 4 gates over the input and the hidden state)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    def lstm(x, w_ih, w_hh, *args, **kwargs) -> int:
        return 2 * x[0] * x[1] * (w_ih[0] * w_ih[1] + w_hh[0] * w_hh[1])

    aten = torch.ops.aten
    return FlopCounterMode(display=False, custom_mapping={
        aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *a, **kw: sdpa_flop_count(q, k, v),
        aten._scaled_dot_product_flash_attention_for_cpu_backward:
            lambda grad, q, k, v, *a, **kw: sdpa_backward_flop_count(grad, q, k, v),
        aten.mkldnn_rnn_layer: lstm,
        aten.mkldnn_rnn_layer_backward: lambda x, w_ih, w_hh, *a, **kw: 2 * lstm(x, w_ih, w_hh)})


#: the kernels that do the arithmetic counted by ``flop_counter``
ARITHMETIC = ("aten::addmm", "aten::mm", "aten::bmm", "aten::_scaled_dot_product_flash_attention_for_cpu",
              "aten::mkldnn_rnn_layer")


def cost_model(n: int, steps: int) -> dict:
    """Floating-point operations of the width part's systems on its batches (an inference pass;
    a training pass's forward and backward, without the optimizer's update), and the share of an
    inference pass's time spent in the kernels that do that arithmetic (``torch.profiler``). If the
    operation counts predict the measured overheads, the overhead is arithmetic: only less of it
    (a narrower co-attention, fewer modules, shorter sequences) lowers it."""
    from torch.profiler import profile

    bench = WidthSystems(n, steps)
    rows = {}
    for name in bench.models:
        if name.endswith(LEVER):  # the same arithmetic as its reference
            continue
        row = rows[name] = {}
        for kind, run in (("infer", bench.infer), ("train", lambda name: bench.train(name, step=False))):
            with flop_counter() as counter:
                run(name)
            row[f"{kind}_gflop"] = counter.get_total_flops() / 1e9
        run = bench.infer
        run(name)  # warm-up
        with profile() as profiler:
            run(name)
        events = profiler.key_averages()
        row["arithmetic_time_share"] = (sum(e.self_cpu_time_total for e in events if e.key in ARITHMETIC)
                                        / sum(e.self_cpu_time_total for e in events))
    for row in rows.values():
        for kind in ("infer", "train"):
            floor = rows["char alone"][f"{kind}_gflop"] + rows["subword alone"][f"{kind}_gflop"]
            row[f"{kind}_gflop_overhead"] = row[f"{kind}_gflop"] / floor - 1
    return {"systems": rows, "sentences": len(bench.test), "train_steps": len(bench.train_batches)}


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


def matmul_softmax_attention(q, k, v, attn_mask, dropout_p: float = 0.0):
    """Attention spelled out (scores, masked softmax, weighted sum): what one
    ``scaled_dot_product_attention`` call replaces."""
    import math

    import torch.nn.functional as F

    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(~attn_mask, float("-inf"))
    return F.dropout(scores.softmax(-1), dropout_p) @ v


def float_mask_attention(q, k, v, attn_mask, dropout_p: float = 0.0):
    """``scaled_dot_product_attention`` with the padding as an added -inf (one row per sequence,
    broadcast over queries) instead of a boolean mask."""
    import torch
    import torch.nn.functional as F

    additive = torch.zeros(attn_mask[..., :1, :].shape, dtype=q.dtype).masked_fill(~attn_mask[..., :1, :], float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=additive, dropout_p=dropout_p)


#: ``--part levers``: the attention the co-attention's blocks use in place of its
#: ``scaled_dot_product_attention`` with a boolean mask
ATTENTION_LEVERS = {"attention as matmul + softmax": matmul_softmax_attention,
                    "attention with a float mask": float_mask_attention}
REFERENCE = "entangle m=2"


def levers_cost(n: int, steps: int, rounds: int = 5) -> dict:
    """The issue's levers at the embedded defaults, each undone alone beside the reference (m=2 as
    ``predict`` and ``train`` run it: batches sorted or grouped by length, ``torch.inference_mode``,
    ``scaled_dot_product_attention`` with boolean masks), all in this process, passes alternating
    (``alternating_timings``). Inference: the first ``n`` WNUT-17 test sentences at batch 32, subword
    side; each lever's logits are compared with the reference's. Training (both heads, fused AdamW):
    ``steps`` batches of 16 spread across an epoch of WNUT-17 train grouped by length, against the
    same windows shuffled into batches; and the padding of a whole epoch either way."""
    from types import SimpleNamespace
    from unittest import mock

    import torch

    from entangle.data.batching import inference_batches, train_loader
    from entangle.data.corpus import load_corpus
    from entangle.modeling import coattention
    from entangle.training import adamw, parameter_groups

    corpus = load_corpus("wnut17", splits=("train",))
    taggers = {name: tagger(name, 32, corpus.labels) for name in ("char alone", "subword alone", REFERENCE)}
    helper = taggers[REFERENCE]
    windows = helper.featurizer.featurize(test_words("wnut17", n))

    def with_windows(chunk: list) -> tuple:
        return chunk, helper.collator(chunk)

    sorted_batches = list(inference_batches(windows, 32, helper.collator))
    input_order = [with_windows(windows[i:i + 32]) for i in range(0, len(windows), 32)]
    train_windows = training_windows(helper, corpus.split("train"))
    epochs = {grouped: list(train_loader(train_windows, 16, with_windows, torch.Generator().manual_seed(0), grouped))
              for grouped in (True, False)}
    # Timed: `steps` of the grouped epoch's batches, spread across it (the first, the longest, left
    # out), against the same windows shuffled into batches: only the padding differs.
    stride = len(epochs[True]) // steps
    grouped_sample = epochs[True][stride // 2 :: stride][:steps]
    windows_sample = [w for chunk, _ in grouped_sample for w in chunk]
    order = torch.randperm(len(windows_sample), generator=torch.Generator().manual_seed(0)).tolist()
    shuffled = [windows_sample[i] for i in order]
    sampled = {True: [batch for _, batch in grouped_sample],
               False: [helper.collator(shuffled[i:i + 16]) for i in range(0, len(shuffled), 16)]}
    optimizers = {name: adamw(parameter_groups(t.model, 5e-5, 5e-4, 0.01)) for name, t in taggers.items()}

    def logits_pass(name: str, batches=sorted_batches, grad_mode=torch.inference_mode) -> dict:
        """Each window's own rows of logits, by the window's identity."""
        side = "char" if name == "char alone" else "subword"
        model, rows = taggers[name].model.eval(), {}
        with grad_mode():
            for chunk, batch in batches:
                logits = getattr(model(**batch, sides=(side,)), f"{side}_logits")
                rows.update({id(w): logits[row, slice(*w.own_rows)].detach() for row, w in enumerate(chunk)})
        return rows

    def train_pass(name: str, grouped: bool = True) -> None:
        model = taggers[name].model.train()
        for batch in sampled[grouped]:
            model(**batch).loss.backward()
            optimizers[name].step()
            optimizers[name].zero_grad()
        model.eval()

    def patched(attention, run):
        with mock.patch.object(coattention, "F", SimpleNamespace(scaled_dot_product_attention=attention)):
            return run()

    def both(name: str) -> dict:
        return {"infer": partial(logits_pass, name), "train": partial(train_pass, name)}

    infer_levers = {"batches in input order": partial(logits_pass, REFERENCE, input_order),
                    "torch.no_grad": partial(logits_pass, REFERENCE, grad_mode=torch.no_grad),
                    "autograd on": partial(logits_pass, REFERENCE, grad_mode=torch.enable_grad),
                    **{name: partial(patched, attention, partial(logits_pass, REFERENCE))
                       for name, attention in ATTENTION_LEVERS.items()}}
    runs = {name: both(name) for name in taggers}
    runs.update({f"{REFERENCE}, {lever}": {"infer": run} for lever, run in infer_levers.items()})
    runs[f"{REFERENCE}, batches not grouped by length"] = {"train": partial(train_pass, REFERENCE, False)}
    for lever, attention in ATTENTION_LEVERS.items():
        runs[f"{REFERENCE}, {lever}"]["train"] = partial(patched, attention, partial(train_pass, REFERENCE))
    rows = alternating_timings(runs, rounds)

    reference = logits_pass(REFERENCE)
    words = sum(w.own_end - w.own_start for w in windows)
    for name, row in rows.items():
        if "infer_s" in row:
            row["infer_words_per_s"] = words / row["infer_s"]
            row["infer_vs_reference"] = rows[REFERENCE]["infer_s"] / row["infer_s"]
        if "train_s" in row:
            row["train_steps_per_s"] = steps / row["train_s"]
            row["train_vs_reference"] = rows[REFERENCE]["train_s"] / row["train_s"]
    for lever, run in infer_levers.items():
        logits = run()
        rows[f"{REFERENCE}, {lever}"]["max_logit_difference"] = max(
            (logits[key] - value).abs().max().item() for key, value in reference.items())

    def padding(batches: list[dict]) -> dict:
        return {kind: {"positions": sum(b[f"{kind}_mask"].numel() for b in batches),
                       "real": sum(b[f"{kind}_mask"].sum().item() for b in batches)} for kind in ("char", "subword")}

    return {"systems": rows, "sentences": n, "words": words, "train_steps": steps, "rounds": rounds,
            "epoch_padding": {("grouped" if grouped else "shuffled"): padding([b for _, b in batches])
                              for grouped, batches in epochs.items()},
            "sample_padding": {("grouped" if grouped else "shuffled"): padding(batches) for grouped, batches in sampled.items()},
            "epoch_batches": len(epochs[True]),
            "projections": projection_cost(helper.model, sorted_batches, rounds)}


def projection_cost(model, batches: list, rounds: int) -> dict:
    """The co-attention's input projections timed alone, on the inputs one inference pass gives its
    blocks (recorded by hooks): keys and values as one matrix product (the model's) or as two, and
    a self-attention block's queries, keys and values as the model's two products or as one."""
    import torch
    import torch.nn.functional as F

    from entangle.modeling.coattention import TransformerBlock

    calls = []

    def record(block, args) -> None:
        x, context = args[0], args[1]
        calls.append((block, torch.randn(x.shape), None if context is x else torch.randn(context.shape)))

    hooks = [block.register_forward_pre_hook(record) for block in model.modules() if isinstance(block, TransformerBlock)]
    with torch.inference_mode():
        for _, batch in batches:
            model(**batch, sides=("subword",))
    for hook in hooks:
        hook.remove()

    def weights(block) -> dict:
        """The block's projections stored each way, so that no pass pays for splitting or joining them."""
        width = block.query.weight.shape[0]
        kv_weight, kv_bias = block.key_value.weight.detach(), block.key_value.bias.detach()
        return {"q": (block.query.weight.detach(), block.query.bias.detach()), "kv": (kv_weight, kv_bias),
                "k": (kv_weight[:width].clone(), kv_bias[:width].clone()), "v": (kv_weight[width:].clone(), kv_bias[width:].clone()),
                "qkv": (torch.cat([block.query.weight, kv_weight]).detach(), torch.cat([block.query.bias, kv_bias]).detach())}

    stored = {block: weights(block) for block, *_ in calls}

    def project(fuse: str) -> None:
        with torch.inference_mode():
            for block, x, context in calls:
                w = stored[block]
                if fuse == "qkv" and context is None:
                    F.linear(x, *w["qkv"])
                    continue
                F.linear(x, *w["q"])
                for part in ("k", "v") if fuse == "none" else ("kv",):
                    F.linear(x if context is None else context, *w[part])

    rows = alternating_timings({"keys and values apart": {"infer": partial(project, "none")},
                                "keys and values fused (the model)": {"infer": partial(project, "kv")},
                                "queries, keys and values fused in self-attention": {"infer": partial(project, "qkv")}},
                               rounds)
    return {"calls": len(calls), "self_attention_calls": sum(context is None for *_, context in calls), "systems": rows}


def one(kind: str, arguments: list[str]) -> None:
    """Run one measurement in this process and print it as JSON with the process's peak memory."""
    functions = {"infer": lambda s, d, b, n: infer(s, d, int(b), int(n)), "train": lambda s, n: train(s, int(n)),
                 "fixed": lambda n: fixed_padding(int(n)), "scale": lambda c, s: scale(int(c), int(s)),
                 "export": export, "backends": lambda s, b, n, d: backends(s, int(b), int(n), d),
                 "paper": lambda e, b, n: paper_size(e, int(b), int(n)),
                 "width": lambda n, steps: width_cost(int(n), int(steps)),
                 "cost": lambda n, steps: cost_model(int(n), int(steps)),
                 "fused": lambda n, steps: fused_cost(int(n), int(steps)),
                 "levers": lambda n, steps: levers_cost(int(n), int(steps)),
                 "autocast": lambda d, b, n: autocast_cost(d, int(b), int(n))}
    result = functions[kind](*arguments)
    print(json.dumps({**result, "peak_mb": peak_mb()}))


def measure(kind: str, *arguments) -> dict:
    print("measuring", kind, *arguments, file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, __file__, "--one", kind, *map(str, arguments)], capture_output=True, text=True)
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["killed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", nargs="+", choices=list(PARTS), default=list(PARTS),
                        help="which measurements to run (default: all); each part rewrites only its own results")
    parser.add_argument("--sentences", type=int, default=256, help="test sentences per inference measurement")
    parser.add_argument("--train-steps", type=int, default=20)
    parser.add_argument("--fixed-sentences", type=int, default=128, help="WNUT-17 test sentences for the fixed-padding comparison")
    parser.add_argument("--backend-sentences", type=int, nargs=2, default=(128, 32), metavar=("BATCH32", "BATCH1"),
                        help="WNUT-17 test sentences per back-end pass at batch 32 and at batch 1")
    parser.add_argument("--paper-sentences", type=int, default=64, help="WNUT-17 test sentences for the paper-size part")
    parser.add_argument("--width-sentences", type=int, default=128, help="WNUT-17 test sentences for the width part")
    parser.add_argument("--width-steps", type=int, default=8, help="training steps (batch 16) per pass in the width part")
    parser.add_argument("--autocast-models", nargs="+", default=[], metavar="DIR",
                        help="trained WNUT-17 model directories for the autocast part")
    parser.add_argument("--autocast-sentences", type=int, default=256, help="WNUT-17 test sentences per autocast pass")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one(args.one[0], args.one[1:])
    import torch

    machine = {"cores": len(os.sched_getaffinity(0)), "threads": torch.get_num_threads(),
               "torch": torch.__version__, "python": platform.python_version(), "cpu": platform.processor(),
               "load_average": os.getloadavg()[0]}
    command = "python benchmarks/speed.py " + " ".join(sys.argv[1:])
    for part in args.part:
        results = {"machine": machine, "command": command}
        if part == "grid":
            results.update(measure_grid(args))
        elif part == "backends":
            results["backends"] = measure_backends(args)
        elif part == "width":
            results["width"] = measure("width", args.width_sentences, args.width_steps)
        elif part == "cost":
            results["cost"] = measure("cost", args.width_sentences, args.width_steps)
        elif part == "fused":
            results["fused"] = measure("fused", args.width_sentences, args.width_steps)
        elif part == "levers":
            results["levers"] = measure("levers", args.width_sentences, args.width_steps)
        elif part == "autocast":
            if not args.autocast_models:
                parser.error("--part autocast needs --autocast-models (trained WNUT-17 model directories)")
            results["autocast"] = [measure("autocast", model, 32, args.autocast_sentences) for model in args.autocast_models]
        else:
            results["paper_size"] = [{"encoders": encoders, "batch": 32, **measure("paper", encoders, 32, args.paper_sentences)}
                                     for encoders in ("embedded", "paper")]
        path, section = PARTS[part]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=2))
        {"grid": write_section, "backends": write_backends_section, "paper-size": write_paper_section,
         "width": write_width_section, "cost": write_cost_section, "fused": write_fused_section,
         "levers": write_levers_section,
         "autocast": write_autocast_section}[part](results)


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


def _cell(row: dict, key: str, fmt: str) -> str:
    return format(row[key], fmt) if key in row else f"failed: {row.get('error', '?')}"


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
        lines.append(f"| {system} | {dataset} | {batch} | {_cell(row, 'sentences_per_s', '.1f')} | "
                     f"{_cell(row, 'words_per_s', '.0f')} | {_cell(row, 'peak_mb', '.0f')} MB | {overhead} |")
    training = {r["system"]: r for r in results["training"]}
    lines += ["", "| system | training steps/s (batch 16) | data pipeline share of a step | peak memory | "
              "step overhead vs char + subword alone |", "|---|---|---|---|---|"]
    floor = None
    if all("steps_per_s" in training.get(s, {}) for s in ("char alone", "subword alone")):
        floor = 1 / training["char alone"]["steps_per_s"] + 1 / training["subword alone"]["steps_per_s"]
    for system, row in training.items():
        overhead = (f"{100 * (1 / row['steps_per_s'] / floor - 1):+.0f}%"
                    if floor and system.startswith("entangle") and "steps_per_s" in row else "")
        lines.append(f"| {system} | {_cell(row, 'steps_per_s', '.2f')} | "
                     f"{(format(100 * row['pipeline_share'], '.1f') + '%') if 'pipeline_share' in row else ''} | "
                     f"{_cell(row, 'peak_mb', '.0f')} MB | {overhead} |")
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
        lines.append(f"| {row['chars']} | {row['subwords']} | {_cell(row, 'seconds', '.4f')} s | "
                     f"{_cell(row, 'peak_mb', '.0f')} MB |")
    machine = results["machine"]
    replace_section(SECTION, f"Machine: {machine['cores']} cores, {machine['threads']} torch threads, torch "
                    f"{machine['torch']}, Python {machine['python']}. Produced by `{results['command'].strip()}`.\n\n"
                    + "\n".join(lines), heading="## Performance (issue #7)")


def _machine_line(results: dict) -> str:
    machine = results["machine"]
    load = f" (load average {machine['load_average']:.1f} at the start)" if "load_average" in machine else ""
    return (f"Machine: {machine['cores']} cores{load}, {machine['threads']} torch thread(s) "
            f"(ONNX Runtime: as many), torch {machine['torch']}, Python {machine['python']}. Produced by "
            f"`{results['command'].strip()}`.")


def write_backends_section(results: dict) -> None:
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
    replace_section("speed-backends", _machine_line(results) + "\n\n" + "\n".join(lines))


def write_paper_section(results: dict) -> None:
    names = {"embedded": "built-in + MiniLM (embedded defaults)", "paper": "CANINE-s-sized + RoBERTa-base-sized"}
    lines = ["| encoders (random weights), m=2, both heads | parameters | batches of 32 | character encoder | "
             "subword encoder | whole model | entanglement / (char + subword) |", "|---|---|---|---|---|---|---|"]
    for row in results["paper_size"]:
        share = f"{100 * row['entanglement_share']:.0f}%" if "entanglement_share" in row else ""
        lines.append(f"| {names[row['encoders']]} | {_cell(row, 'parameters_m', '.0f')} M | {row.get('batches', '')} | "
                     f"{_cell(row, 'char_s', '.2f')} s | {_cell(row, 'subword_s', '.2f')} s | "
                     f"{_cell(row, 'model_s', '.2f')} s | {share} |")
    replace_section("speed-paper-size", _machine_line(results) + "\n\n" + "\n".join(lines))


def _overhead(name: str, row: dict, key: str) -> str:
    """An overhead cell; empty for an encoder alone, which is part of the floor itself."""
    return "" if name.endswith("alone") else f"{100 * row[f'{key}_overhead']:+.0f}%"


def _failed(results: dict, part: str, section: str) -> bool:
    """Whether the part's measurement failed; if so, its section says why."""
    if "systems" in results[part]:
        return False
    replace_section(section, _machine_line(results) + f"\n\nfailed: {results[part].get('error', '?')}")
    return True


def write_width_section(results: dict) -> None:
    if _failed(results, "width", "speed-width"):
        return
    width = results["width"]

    lines = ["| system | parameters | precision | inference words/s (batch 32) | inference overhead vs char + subword "
             "alone | training steps/s (batch 16) | step overhead vs char + subword alone |",
             "|---|---|---|---|---|---|---|"]
    for precision, suffix in (("float32", ""), ("bf16 autocast", "_bf16")):
        for name, row in width["systems"].items():
            if not name.endswith(LEVER):
                lines.append(f"| {name} | {row['parameters_m']:.1f} M | {precision} | {row[f'infer{suffix}_per_s']:.0f} | "
                             f"{_overhead(name, row, 'infer' + suffix)} | {row[f'train{suffix}_per_s']:.2f} | "
                             f"{_overhead(name, row, 'train' + suffix)} |")
    lines += ["", "| system | training steps/s, fused AdamW (as above) | for-loop AdamW | fused speed-up |",
              "|---|---|---|---|"]
    for name, row in width["systems"].items():
        if name.endswith(LEVER):
            reference = width["systems"][name.removesuffix(LEVER)]
            lines.append(f"| {name.removesuffix(LEVER)} | {reference['train_per_s']:.2f} | {row['train_per_s']:.2f} | "
                         f"{row['fused_speedup']:.2f}× |")
    lines += ["", f"{width['sentences']} WNUT-17 test sentences ({width['words']} words) per inference pass, "
              f"{width['train_steps']} training batches per training pass; median of {width['rounds']} alternating passes "
              f"after a warm-up pass of each; peak "
              f"memory of the process (all models): {results['width'].get('peak_mb', 0):.0f} MB. The overheads "
              "under bf16 are against the two encoders alone under bf16."]
    replace_section("speed-width", _machine_line(results) + "\n\n" + "\n".join(lines))


def write_cost_section(results: dict) -> None:
    """The operation counts beside the overheads that the width part measured (its JSON, same
    systems and batches)."""
    if _failed(results, "cost", "speed-cost"):
        return
    cost = results["cost"]
    width_json = PARTS["width"][0]
    measured = json.loads(width_json.read_text())["width"]["systems"] if width_json.is_file() else {}

    def percent(value: float | None) -> str:
        return "" if value is None else f"{100 * value:+.0f}%"

    lines = ["| system | inference GFLOP | overhead in operations | measured overhead | training GFLOP (forward + "
             "backward) | overhead in operations | measured step overhead | arithmetic kernels' share of inference time |",
             "|---|---|---|---|---|---|---|---|"]
    for name, row in cost["systems"].items():
        alone = name.endswith("alone")
        timed = measured.get(name, {})
        lines.append(
            f"| {name} | {row['infer_gflop']:.1f} | {'' if alone else percent(row['infer_gflop_overhead'])} | "
            f"{'' if alone else percent(timed.get('infer_overhead'))} | {row['train_gflop']:.1f} | "
            f"{'' if alone else percent(row['train_gflop_overhead'])} | {'' if alone else percent(timed.get('train_overhead'))} | "
            f"{100 * row['arithmetic_time_share']:.0f}% |")
    lines += ["", f"Operations counted by torch's `FlopCounterMode` (matrix products, attention, the BiLSTM) on the "
              f"width part's batches: {cost['sentences']} WNUT-17 test sentences at batch 32 (subword-side prediction), "
              f"{cost['train_steps']} training batches of 16 (both heads; the optimizer's update is not counted). "
              f"Measured overheads: `{width_json.relative_to(ROOT)}` (float32), the same systems and batches timed. "
              "Arithmetic kernels: matrix products, flash attention and the LSTM layer, as a share of one "
              "inference pass's CPU time (`torch.profiler`)."]
    replace_section("speed-cost", _machine_line(results) + "\n\n" + "\n".join(lines))


def write_fused_section(results: dict) -> None:
    if _failed(results, "fused", "speed-fused"):
        return
    fused = results["fused"]

    lines = ["| system | mode | inference words/s (batch 32) | inference overhead vs char + subword alone | "
             "training steps/s (batch 16) | step overhead vs char + subword alone | warm-up (inference / training) |",
             "|---|---|---|---|---|---|---|"]
    for name, row in fused["systems"].items():
        for mode in MODES:
            lines.append(f"| {name} | {mode} | {row[f'infer_{mode}_words_per_s']:.0f} | "
                         f"{_overhead(name, row, f'infer_{mode}')} | {row[f'train_{mode}_steps_per_s']:.2f} | "
                         f"{_overhead(name, row, f'train_{mode}')} | {row[f'infer_{mode}_warmup_s']:.0f} s / "
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
    replace_section("speed-fused", _machine_line(results) + "\n\n" + "\n".join(lines))


def write_levers_section(results: dict) -> None:
    if _failed(results, "levers", "speed-levers"):
        return
    levers = results["levers"]
    systems = levers["systems"]

    def cell(row: dict, kind: str, rate: str, fmt: str) -> str:
        return f"{row[f'{kind}_{rate}']:{fmt}} ({row[f'{kind}_vs_reference']:.2f}×)" if f"{kind}_s" in row else ""

    lines = ["| system: what differs from the reference | inference words/s (batch 32; speed vs reference) | "
             "training steps/s (batch 16; speed vs reference) | largest logit difference from the reference |",
             "|---|---|---|---|"]
    for name, row in systems.items():
        difference = f"{row['max_logit_difference']:.1e}" if "max_logit_difference" in row else ""
        label = "entangle m=2 (the reference)" if name == REFERENCE else name
        lines.append(f"| {label} | {cell(row, 'infer', 'words_per_s', '.0f')} | {cell(row, 'train', 'steps_per_s', '.3f')} | "
                     f"{difference} |")
    padding, sample = levers["epoch_padding"], levers["sample_padding"]

    def waste(counted: dict, order: str, kind: str) -> str:
        counts = counted[order][kind]
        return f"{100 * (counts['positions'] / counts['real'] - 1):.0f}%"

    lines += ["", f"Padding, as extra positions over the real ones, over an epoch of WNUT-17 train ({levers['epoch_batches']} "
              f"batches of 16): characters {waste(padding, 'grouped', 'char')} grouped by length vs "
              f"{waste(padding, 'shuffled', 'char')} shuffled, subwords {waste(padding, 'grouped', 'subword')} vs "
              f"{waste(padding, 'shuffled', 'subword')}; in the timed batches (the same windows either way): characters "
              f"{waste(sample, 'grouped', 'char')} vs {waste(sample, 'shuffled', 'char')}, subwords "
              f"{waste(sample, 'grouped', 'subword')} vs {waste(sample, 'shuffled', 'subword')}."]
    projections = levers["projections"]
    reference_s = systems[REFERENCE]["infer_s"]
    lines += ["", "| co-attention input projections, timed alone | time per inference pass | share of the reference's pass |",
              "|---|---|---|"]
    lines += [f"| {name} | {1000 * row['infer_s']:.0f} ms | {100 * row['infer_s'] / reference_s:.1f}% |"
              for name, row in projections["systems"].items()]
    lines += ["", f"{levers['sentences']} WNUT-17 test sentences ({levers['words']} words) per inference pass, "
              f"{levers['train_steps']} training batches per training pass (spread across the grouped epoch, or "
              "their windows shuffled); median of "
              f"{levers['rounds']} alternating passes after a warm-up pass of each. Projections: the "
              f"{projections['calls']} block calls of one reference inference pass ({projections['self_attention_calls']} "
              "of them self-attention), on random inputs of their shapes. Peak memory of the process (all models): "
              f"{levers.get('peak_mb', 0):.0f} MB."]
    replace_section("speed-levers", _machine_line(results) + "\n\n" + "\n".join(lines))


def write_autocast_section(results: dict) -> None:
    lines = ["| model | precision | words/s (batch 32) | speed vs float32 | test F1 per side | words labelled as in float32 |",
             "|---|---|---|---|---|---|"]
    for row in results["autocast"]:
        if "precisions" not in row:
            lines.append(f"| {row.get('model', '?')} | failed: {row.get('error', '?')} | | | | |")
            continue
        name = f"m={row['m']}, side {row['side']} (`{row['model']}`)"
        reference = row["precisions"]["fp32"]["words_per_s"]
        for precision, cells in row["precisions"].items():
            f1 = ", ".join(f"{side} {100 * value:.2f}" for side, value in cells.get("f1", {}).items()) or "not scored"
            agreement = ", ".join(f"{side} {100 * value:.2f}%" for side, value in cells.get("agreement", {}).items())
            lines.append(f"| {name} | {precision} | {cells['words_per_s']:.0f} | {cells['words_per_s'] / reference:.2f}× | "
                         f"{f1} | {agreement} |")
    first = next((row for row in results["autocast"] if "precisions" in row), None)
    if first:
        lines += ["", f"Speed: the first {first['sentences']} WNUT-17 test sentences ({first['words']} words) per pass, "
                  "the three precisions alternating, median of 3 passes; F1 and agreement: the whole test set "
                  f"({first['test_words']} words)."]
    replace_section("speed-autocast", _machine_line(results) + "\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
