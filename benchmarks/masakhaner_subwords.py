"""How well do the two offline subword encoders' tokenizers cover the MasakhaNER languages?

Per language, on the training words as the model sees them (``Featurizer.align``: each word's
pieces inside its sentence): subwords per word, the share of words with an unknown token, the
share of subword tokens that are unknown, and the share of words whose letters lose their
diacritics in the tokenizer's normaliser. Neither tokenizer has byte fallback: a character
outside the vocabulary becomes the unknown token (WordPiece: the whole word does).

    python benchmarks/masakhaner_subwords.py

Writes ``benchmarks/results/masakhaner_subwords.json`` and a section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import json
import unicodedata
import warnings
from pathlib import Path

from results_md import replace_section
from transformers import AutoTokenizer

from entangle import load_corpus
from entangle.data.datasets import MASAKHANER_LANGUAGES
from entangle.data.features import Featurizer
from entangle.modeling.encoders import resolve_subword_source

ROOT = Path(__file__).resolve().parent.parent
RESULTS_JSON = ROOT / "benchmarks" / "results" / "masakhaner_subwords.json"
SECTION = "masakhaner-subwords"
ENCODERS = {"minilm": "MiniLM (BERT uncased WordPiece, 30k)", "me5-small": "multilingual-e5-small (XLM-R Unigram, 250k)"}


def marks(text: str) -> int:
    """Combining marks (tone marks, accents) of the text's canonical decomposition."""
    return sum(unicodedata.category(c) == "Mn" for c in unicodedata.normalize("NFD", text))


def coverage(tokenizer, sentences: list[list[str]]) -> dict:
    aligned = Featurizer(tokenizer, max_chars=None, max_subwords=10_000).align(sentences)
    pieces = [p for a in aligned for p in a.subwords]
    words = [w for s in sentences for w in s]
    unk = tokenizer.unk_token_id
    normalizer = tokenizer.backend_tokenizer.normalizer
    with_marks = [w for w in words if marks(w)]
    return {
        "words": len(words),
        "subwords_per_word": sum(map(len, pieces)) / len(words),
        "words_with_unk": sum(unk in p for p in pieces) / len(words),
        "unk_share_of_subwords": sum(p.count(unk) for p in pieces) / sum(map(len, pieces)),
        "words_with_diacritics": len(with_marks) / len(words),
        "diacritics_lost": sum(marks(normalizer.normalize_str(w)) < marks(w) for w in with_marks) / max(len(with_marks), 1),
    }


def main() -> None:
    tokenizers = {name: AutoTokenizer.from_pretrained(resolve_subword_source(name)) for name in ENCODERS}
    results = {"encoders": ENCODERS, "languages": {}}
    for language in MASAKHANER_LANGUAGES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # I- tags repaired in a few files
            sentences = [s.words for s in load_corpus(f"masakhaner-{language}", splits=("train",)).train]
        results["languages"][language] = {name: coverage(t, sentences) for name, t in tokenizers.items()}
        print(language, json.dumps(results["languages"][language]), flush=True)
    RESULTS_JSON.write_text(json.dumps(results, indent=2) + "\n")

    lines = [("| language | train words | subwords/word: MiniLM | me5-small | words with [UNK]: MiniLM | me5-small "
              "| words with diacritics | of those, stripped by MiniLM | by me5-small |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for language, row in results["languages"].items():
        mini, me5 = row["minilm"], row["me5-small"]
        diacritics = round(mini["words_with_diacritics"] * mini["words"])
        lines.append(f"| {language} | {mini['words']:,} | {mini['subwords_per_word']:.2f} | {me5['subwords_per_word']:.2f} "
                     f"| {100 * mini['words_with_unk']:.2f}% | {100 * me5['words_with_unk']:.2f}% "
                     f"| {diacritics:,} ({100 * mini['words_with_diacritics']:.1f}%) | {100 * mini['diacritics_lost']:.0f}% "
                     f"| {100 * me5['diacritics_lost']:.0f}% |")
    replace_section(SECTION, "\n".join(lines) + "\n\nProduced by `python benchmarks/masakhaner_subwords.py` "
                    "(`benchmarks/results/masakhaner_subwords.json` also has the share of unknown subword tokens).",
                    heading="## MasakhaNER: what the subword tokenizers see (issue #4)")


if __name__ == "__main__":
    main()
