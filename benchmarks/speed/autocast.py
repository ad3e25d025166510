"""``--part autocast --autocast-models DIR ...``: trained models on WNUT-17 test in float32 and
under bf16 and fp16 autocast (``Tagger(autocast=...)``), one process per model alternating the
three (words/s at batch 32, median), and test F1 and agreement with the float32 predictions on
the whole test set (fp16, several times slower on a CPU: speed only).
"""

from __future__ import annotations

from common import RESULTS_DIR, alternating_passes, machine_line
from results_md import replace_section

RESULTS_JSON = RESULTS_DIR / "speed_autocast.json"
SECTION = "speed-autocast"
PRECISIONS = (None, "bf16", "fp16")  # Tagger(autocast=...): float32, then the two half-precision types
#: timed but not scored on the whole test set: fp16 runs several times slower than float32 on a CPU
SPEED_ONLY = ("fp16",)


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


#: what ``--one KIND ARGUMENTS`` runs in a child process, the arguments as strings
MEASUREMENTS = {"autocast": lambda d, b, n: autocast_cost(d, int(b), int(n))}


def write_section(results: dict) -> None:
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
    replace_section(SECTION, machine_line(results) + "\n\n" + "\n".join(lines))
