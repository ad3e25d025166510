"""Does each side of a trained entanglement model use the other side? Each side's dev and test
scores with both encoders' states as trained, and with the *other* encoder's states replaced by
zeros (the co-attention then reads nothing from it; everything else unchanged).

    python benchmarks/side_reliance.py --model NAME DATASET MODEL_DIR [--model ...]

Writes ``benchmarks/results/side_reliance.json`` and a table section in ``benchmarks/RESULTS.md``.
A side that barely moves has learned to ignore the other one: its co-attention is then only
extra layers on top of its own encoder.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from results_md import replace_section

from entangle import Tagger, load_corpus

ROOT = Path(__file__).resolve().parent.parent
RESULTS_JSON = ROOT / "benchmarks" / "results" / "side_reliance.json"
SECTION = "side-reliance"
OTHER = {"subword": "char", "char": "subword"}


def zero_states(module, inputs, output):
    """Forward hook on an encoder: the same output with every state zero."""
    output.last_hidden_state = output.last_hidden_state.new_zeros(output.last_hidden_state.shape)
    return output


def scores(tagger: Tagger, corpus) -> dict:
    """``{side: {split: main score × 100}}`` for every trained side."""
    score = tagger.task.main_score
    per_split = {split: tagger.evaluate(corpus.split(split), split) for split in ("dev", "test")}
    return {side: {split: 100 * per_split[split][side][score] for split in per_split} for side in tagger.model.config.trained_sides}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs=3, action="append", required=True, metavar=("NAME", "DATASET", "MODEL_DIR"))
    args = parser.parse_args()
    rows = []
    for name, data, directory in args.model:
        tagger = Tagger.from_pretrained(directory)
        if not tagger.model.config.num_coattention_layers:
            parser.error(f"{directory}: not an entanglement model (m=0)")
        corpus = load_corpus(data, task=tagger.model.config.task, splits=("dev", "test"))
        as_trained = scores(tagger, corpus)
        for side in tagger.model.config.trained_sides:
            encoder = getattr(tagger.model.entangle, f"{OTHER[side]}_encoder")
            hook = encoder.register_forward_hook(zero_states)
            zeroed = scores(tagger, corpus)[side]
            hook.remove()
            rows.append({"name": name, "model": directory, "data": data, "side": side, "score": tagger.task.main_score,
                         "as_trained": as_trained[side], "other_zeroed": zeroed})
    RESULTS_JSON.write_text(json.dumps(rows, indent=2))
    lines = ["| model | data | side | dev, as trained | dev, other side's encoder zeroed | test, as trained | "
             "test, other side's encoder zeroed |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        a, z = row["as_trained"], row["other_zeroed"]
        lines.append(f"| {row['name']} | {row['data']} | {row['side']} | {a['dev']:.2f} | {z['dev']:.2f} | "
                     f"{a['test']:.2f} | {z['test']:.2f} |")
    command = "python benchmarks/side_reliance.py " + " ".join(f"--model '{n}' {d} {m}" for n, d, m in args.model)
    replace_section(SECTION, f"Produced by `{command}`; scores × 100 (F1 for NER, accuracy for POS).\n\n"
                    + "\n".join(lines))


if __name__ == "__main__":
    main()
