"""Scores: entity-level P/R/F1 (seqeval, strict IOB2) for NER, token accuracy for other tag sets,
accuracy and macro-F1 (scikit-learn) for text classification, character accuracy (all words,
mixed words) for intra-word code-switching."""

from __future__ import annotations


def token_accuracy(gold: list[list[str]], predicted: list[list[str]]) -> float:
    pairs = [(g, p) for gs, ps in zip(gold, predicted, strict=True) for g, p in zip(gs, ps, strict=True)]
    return sum(g == p for g, p in pairs) / len(pairs) if pairs else 0.0


def entity_scores(gold: list[list[str]], predicted: list[list[str]]) -> dict:
    """Token accuracy and entity precision, recall and F1 with a ``per_type`` report, as a flat dict.

    Strict mode: an entity counts only with exactly the right span and type, and ill-formed
    predicted sequences (I- after O) are not silently turned into entities."""
    from seqeval.metrics import classification_report  # it imports scikit-learn: only when scoring
    from seqeval.scheme import IOB2

    report = classification_report(gold, predicted, mode="strict", scheme=IOB2, output_dict=True, zero_division=0)
    micro = report.pop("micro avg")
    for key in ("macro avg", "weighted avg"):
        report.pop(key, None)
    return {"accuracy": token_accuracy(gold, predicted), "precision": micro["precision"], "recall": micro["recall"],
            "f1": micro["f1-score"],
            "per_type": {name: {"precision": v["precision"], "recall": v["recall"], "f1": v["f1-score"],
                                "support": int(v["support"])} for name, v in sorted(report.items())}}


def classification_scores(gold: list[str], predicted: list[str]) -> dict:
    """Accuracy, macro-F1 (every class weighs the same, as TweetEval reports most tasks) and a
    per-class report under ``per_type`` (the key the word-level reports use)."""
    from sklearn.metrics import classification_report as class_report  # only when scoring

    report = class_report(gold, predicted, output_dict=True, zero_division=0, labels=sorted(set(gold) | set(predicted)))
    return {
        "accuracy": sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold) if gold else 0.0,
        "macro_f1": report["macro avg"]["f1-score"],
        "per_type": {name: {"precision": report[name]["precision"], "recall": report[name]["recall"],
                            "f1": report[name]["f1-score"], "support": int(report[name]["support"])}
                     for name in sorted(set(gold) | set(predicted))},
    }


# Per-example counts that a corpus score adds up, so that the score of any resample of the examples
# (a paired bootstrap) is the score of the summed counts.
def accuracy_counts(gold: list[list[str]], predicted: list[list[str]]) -> list[tuple[int, int]]:
    """Per example: (units right, units)."""
    return [(sum(g == p for g, p in zip(gs, ps, strict=True)), len(gs)) for gs, ps in zip(gold, predicted, strict=True)]


def accuracy_of_counts(counts: list[tuple[int, int]]) -> float:
    right, total = (sum(column) for column in zip(*counts)) if counts else (0, 0)
    return right / total if total else 0.0


def entity_counts(gold: list[list[str]], predicted: list[list[str]]) -> list[tuple[int, int, int]]:
    """Per sentence: (entities right, predicted, gold), strict IOB2 as :func:`entity_scores` counts them."""
    from seqeval.scheme import IOB2, Entities

    gold_entities = Entities(gold, IOB2, suffix=False).entities
    predicted_entities = Entities(predicted, IOB2, suffix=False).entities
    counts = []
    for g, p in zip(gold_entities, predicted_entities, strict=True):
        g, p = {e.to_tuple() for e in g}, {e.to_tuple() for e in p}
        counts.append((len(g & p), len(p), len(g)))
    return counts


def f1_of_counts(counts: list[tuple[int, int, int]]) -> float:
    right, predicted, gold = (sum(column) for column in zip(*counts)) if counts else (0, 0, 0)
    return 2 * right / (predicted + gold) if predicted + gold else 0.0


def class_counts(gold: list[str], predicted: list[str]) -> list[dict[str, tuple[int, int, int]]]:
    """Per text: {class: (right, predicted, gold)} for its gold and its predicted class."""
    return [{c: (int(g == p == c), int(p == c), int(g == c)) for c in {g, p}} for g, p in zip(gold, predicted, strict=True)]


def macro_f1_of_counts(counts: list[dict[str, tuple[int, int, int]]]) -> float:
    """Macro-F1 over the classes that occur (predicted or gold) among these texts, as scikit-learn
    computes it over the labels present."""
    sums: dict[str, list[int]] = {}
    for per_class in counts:
        for c, values in per_class.items():
            sums[c] = [a + b for a, b in zip(sums.get(c, (0, 0, 0)), values)]
    f1s = [2 * right / (predicted + gold) for right, predicted, gold in sums.values() if predicted + gold]
    return sum(f1s) / len(f1s) if f1s else 0.0


def format_report(metrics: dict) -> str:
    lines = [f"{key:>10}: {value:.4f}" for key, value in metrics.items() if isinstance(value, float)]
    if "per_type" in metrics:
        lines.append(f"{'type':>16} {'prec':>7} {'rec':>7} {'f1':>7} {'support':>8}")
        for name, v in metrics["per_type"].items():
            lines.append(f"{name:>16} {v['precision']:7.4f} {v['recall']:7.4f} {v['f1']:7.4f} {v['support']:8d}")
    return "\n".join(lines)


def char_accuracy(gold: list[list[list[str]]], predicted: list[list[list[str]]], mixed: list[list[bool]]) -> dict:
    """Character accuracy over all words and over the words that switch language inside them
    (intra-word code-switching), from one label per character of each word of each sentence.

    Both are micro averages over characters, so a long word weighs more than a short one;
    ``mixed_char_accuracy`` is NaN when no word is mixed (0 would read as "all wrong").
    """
    if not len(gold) == len(predicted) == len(mixed):
        raise ValueError(f"{len(gold)} gold, {len(predicted)} predicted and {len(mixed)} mixed-flag sentences")
    right = total = mixed_right = mixed_total = mixed_words = 0
    for index, (gold_words, predicted_words, flags) in enumerate(zip(gold, predicted, mixed)):
        if not len(gold_words) == len(predicted_words) == len(flags):
            raise ValueError(f"sentence {index}: {len(gold_words)} gold words, {len(predicted_words)} predicted, "
                             f"{len(flags)} mixed flags")
        for word, (g, p, is_mixed) in enumerate(zip(gold_words, predicted_words, flags)):
            if len(g) != len(p):
                raise ValueError(f"sentence {index}, word {word}: {len(g)} gold and {len(p)} predicted characters")
            hits = sum(a == b for a, b in zip(g, p))
            right, total = right + hits, total + len(g)
            if is_mixed:
                mixed_right, mixed_total, mixed_words = mixed_right + hits, mixed_total + len(g), mixed_words + 1
    return {
        "char_accuracy": right / total if total else 0.0,
        "mixed_char_accuracy": mixed_right / mixed_total if mixed_total else float("nan"),
        "chars": total,
        "mixed_chars": mixed_total,
        "mixed_words": mixed_words,
    }
