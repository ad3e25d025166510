"""How much of each word's cross-attention lands on its own word's other-side positions.

The character head reads a word's first character after the co-attention. It can only use what
the subword side knows of that word if the first character's cross-attention finds the word's
subwords; nothing but content tells it where they are (unless ``--positional-alignment``). This
measures, per co-attention module (heads averaged, eval mode, ``entangle.attention``):

- char -> subword: the attention mass from each word's first character onto the word's subwords,
  against the mass a uniform spread over the window's subwords would give;
- subword -> char: the same from each word's first subword onto the word's characters.

    python benchmarks/attention_alignment.py MODEL_DIR --data wnut17 --sentences 300 --output out.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from entangle.attention import cross_attention
from entangle.data.corpus import load_corpus
from entangle.predict import Tagger


def own_word_mass(attention, direction: str) -> list[dict[str, float]]:
    """Per module: the mass from each word's first position onto its own word, and uniform's, summed
    over the words (averaged by ``main`` over every sentence's words)."""
    if direction == "char_to_subword":
        queries, keys, weights = attention.char_words, attention.subword_words, attention.char_to_subword
    else:
        queries, keys, weights = attention.subword_words, attention.char_words, attention.subword_to_char
    firsts = {}
    for position, word in enumerate(queries):
        if word is not None and word not in firsts:
            firsts[word] = position
    own = {word: [k for k, owner in enumerate(keys) if owner == word] for word in firsts}
    uniform = sum(len(own[word]) / len(keys) for word in firsts)
    means = [module.mean(0) for module in weights]  # heads averaged, once per module: (n_queries, n_keys)
    return [{"mass": sum(float(mean[position, own[word]].sum()) for word, position in firsts.items()),
             "uniform": uniform, "words": len(firsts)} for mean in means]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--data", default="wnut17")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--sentences", type=int, default=300, help="the split's first N sentences")
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    tagger = Tagger.from_pretrained(args.model, device="cpu")
    sentences = load_corpus(args.data, splits=(args.split,)).split(args.split)[:args.sentences]
    totals: dict[str, list[dict[str, float]]] = {}
    for sentence in sentences:
        attention = cross_attention(tagger, sentence.words)
        for direction in ("char_to_subword", "subword_to_char"):
            for i, module in enumerate(own_word_mass(attention, direction)):
                slot = totals.setdefault(direction, [])
                if len(slot) <= i:
                    slot.append({"mass": 0.0, "uniform": 0.0, "words": 0})
                for key in ("mass", "uniform", "words"):
                    slot[i][key] += module[key]
    result = {"model": args.model, "data": args.data, "split": args.split, "sentences": len(sentences),
              "command": "python benchmarks/attention_alignment.py " + " ".join(
                  f"{args.model} --data {args.data} --split {args.split} --sentences {args.sentences} "
                  f"--output {args.output}".split()),
              **{direction: [{"module": i + 1, "own_word_mass": round(m["mass"] / m["words"], 4),
                              "uniform": round(m["uniform"] / m["words"], 4), "words": m["words"]}
                             for i, m in enumerate(modules)] for direction, modules in totals.items()}}
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
