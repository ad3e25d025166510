"""Where a CPU training step goes, for the two optimizer levers (issues #4 and #7):

- multilingual-e5-small (250k-piece vocabulary) alone on MasakhaNER Amharic, batch 16: forward,
  backward, clipping, AdamW step, with and without ``--freeze-subword-embeddings``;
- the AdamW step alone over the embedded-defaults m=2 model (random gradients): the for-loop
  AdamW against the fused one that training uses (``entangle.training.adamw``).

    python benchmarks/optimizer_cost.py      # prints a Markdown table; times are means over steps 3-10
"""

from __future__ import annotations

import time

import torch

from entangle.data.batching import train_loader
from entangle.data.corpus import load_corpus
from entangle.modeling import EntangleForTokenClassification
from entangle.modeling.encoders import load_char_encoder, load_subword_encoder
from entangle.predict import Tagger
from entangle.training import adamw, freeze_subword_embeddings, parameter_groups


def step_parts(freeze: bool) -> dict:
    torch.manual_seed(0)
    corpus = load_corpus("masakhaner-amh", splits=("train",))
    sentences = corpus.split("train")[:160]
    tagger = Tagger.create("builtin", "multilingual-e5-small", corpus.labels, coattention_layers=0, side="subword", task="ner")
    model, label2id = tagger.model, tagger.model.config.label2id
    windows = tagger.featurizer.featurize([s.words for s in sentences], [[label2id[t] for t in s.tags] for s in sentences])
    if freeze:
        freeze_subword_embeddings(model)
    optimizer = torch.optim.AdamW(parameter_groups(model, 5e-5, 5e-4, 0.01))  # as the MasakhaNER runs trained
    parts = dict.fromkeys(("forward", "backward", "clip", "AdamW step"), 0.0)
    batches = list(train_loader(windows, 16, tagger.collator, torch.Generator().manual_seed(0)))
    for i, batch in enumerate(batches):
        times = [time.perf_counter()]
        loss = model(**batch).loss
        times.append(time.perf_counter())
        loss.backward()
        times.append(time.perf_counter())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        times.append(time.perf_counter())
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter())
        if i >= 2:
            for key, start, end in zip(parts, times, times[1:]):
                parts[key] += (end - start) / (len(batches) - 2)
    return parts


def adamw_step(fused: bool, steps: int = 5) -> float:
    char, (subword, tokenizer) = load_char_encoder("builtin"), load_subword_encoder("minilm")
    model = EntangleForTokenClassification.from_encoders(char, subword, ["O", "B-X", "I-X"], tokenizer=tokenizer,
                                                         num_coattention_layers=2, side="both")[0]
    for param in model.parameters():
        param.grad = torch.randn_like(param) * 1e-3
    groups = parameter_groups(model, 5e-5, 5e-4, 0.01)
    optimizer = adamw(groups) if fused else torch.optim.AdamW(groups)
    optimizer.step()  # state allocated outside the timing
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.step()
    return (time.perf_counter() - start) / steps


def main() -> None:
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)\n")
    print("| me5-small alone, MasakhaNER amh, batch 16 | forward | backward | clip | AdamW step | whole step |")
    print("|---|---|---|---|---|---|")
    for freeze in (False, True):
        parts = step_parts(freeze)
        print(f"| {'input embeddings frozen' if freeze else 'everything trained'} | "
              + " | ".join(f"{v:.2f} s" for v in parts.values()) + f" | {sum(parts.values()):.2f} s |")
    loop, fused = adamw_step(False), adamw_step(True)
    print(f"\nAdamW step over entangle m=2 (embedded defaults, random gradients): for-loop {loop:.3f} s, "
          f"fused {fused:.3f} s ({loop / fused:.1f}×).")


if __name__ == "__main__":
    main()
