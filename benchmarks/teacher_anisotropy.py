"""How much a subword encoder's token states share one direction: the mean cosine between the
contextual states of random pairs of tokens. A high value makes plain cosine distillation
(``pretrain-char --distill-loss cosine``) easy to satisfy without learning the words, which is
why ``--distill-loss centered`` exists.

    python benchmarks/teacher_anisotropy.py --output benchmarks/results/teacher_anisotropy.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from entangle.data.corpus import load_corpus
from entangle.modeling.encoders import load_subword_encoder


def mean_pairwise_cosine(name: str, texts: list[str], pairs: int, seed: int) -> float:
    model, tokenizer = load_subword_encoder(name)
    model.eval()
    batch = tokenizer(texts, return_tensors="pt", padding=True, truncation=True)
    with torch.inference_mode():
        states = model(**batch).last_hidden_state[batch["attention_mask"].bool()]
    states = torch.nn.functional.normalize(states, dim=-1)
    generator = torch.Generator().manual_seed(seed)
    first, second = (torch.randint(len(states), (pairs,), generator=generator) for _ in range(2))
    keep = first != second
    return (states[first[keep]] * states[second[keep]]).sum(-1).mean().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["wnut17", "masakhaner-hau", "masakhaner-yor"])
    parser.add_argument("--teachers", nargs="+", default=["minilm", "multilingual-e5-small"])
    parser.add_argument("--sentences", type=int, default=40, help="first training sentences of each dataset")
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    result = {"command": "python benchmarks/teacher_anisotropy.py " + " ".join(
        f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in vars(args).items()),
        "mean_pairwise_cosine": {}}
    for data in args.data:
        texts = [" ".join(sentence.words) for sentence in load_corpus(data).train[: args.sentences]]
        result["mean_pairwise_cosine"][data] = {
            teacher: round(mean_pairwise_cosine(teacher, texts, args.pairs, seed=0), 3) for teacher in args.teachers}
        print(data, result["mean_pairwise_cosine"][data])
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
