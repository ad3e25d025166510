"""``--part width``: the co-attention width lever. Inference and training passes of the two
encoders alone and of m=2 at each width in ``WIDTHS``, in float32 and under bf16 autocast, all
built on the same encoders and timed side by side in one process (``WidthSystems``,
``alternating_timings``); beside them the fused AdamW against the for-loop one (``LEVER``).
``--part cost`` and ``--part fused`` measure the same systems on the same batches.
"""

from __future__ import annotations

from functools import partial

from common import RESULTS_DIR, alternating_timings, failed, machine_line, overhead_cell, test_words, training_windows
from results_md import replace_section

RESULTS_JSON = RESULTS_DIR / "speed_width.json"
SECTION = "speed-width"
#: (co-attention width, heads) for ``--part width``; 384 with 12 heads is the default (MiniLM's)
WIDTHS = [(384, 12), (192, 6), (128, 4), (64, 4)]
#: what ``--part width`` times per system: inference and training steps, in float32 and under bf16 autocast
KINDS = ("infer", "train", "infer_bf16", "train_bf16")
#: suffix of the systems of ``--part width`` trained with the for-loop AdamW instead of the fused one
LEVER = ", for-loop AdamW"


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
        # Featurizes for every system alike: an entanglement model's batches hold both sides' inputs
        # (and each subword's character span, if any model reads them; the others ignore them).
        entangled = sorted((model for name, model in self.models.items() if name.startswith("entangle")),
                           key=lambda model: not model.config.uses_subword_char_spans)
        helper = Tagger(entangled[0], tokenizer, 32)
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


#: what ``--one KIND ARGUMENTS`` runs in a child process, the arguments as strings
MEASUREMENTS = {"width": lambda n, steps: width_cost(int(n), int(steps))}


def write_section(results: dict) -> None:
    if failed(results, "width", SECTION):
        return
    width = results["width"]

    lines = ["| system | parameters | precision | inference words/s (batch 32) | inference overhead vs char + subword "
             "alone | training steps/s (batch 16) | step overhead vs char + subword alone |",
             "|---|---|---|---|---|---|---|"]
    for precision, suffix in (("float32", ""), ("bf16 autocast", "_bf16")):
        for name, row in width["systems"].items():
            if not name.endswith(LEVER):
                lines.append(f"| {name} | {row['parameters_m']:.1f} M | {precision} | {row[f'infer{suffix}_per_s']:.0f} | "
                             f"{overhead_cell(name, row, 'infer' + suffix)} | {row[f'train{suffix}_per_s']:.2f} | "
                             f"{overhead_cell(name, row, 'train' + suffix)} |")
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
    replace_section(SECTION, machine_line(results) + "\n\n" + "\n".join(lines))
