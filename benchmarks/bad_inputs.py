"""Bad input, counted: seeded random and damaged inputs through the command line, each ending in a
valid result, one clean error line, or a traceback (which would be a bug).

Families: plain text and CoNLL input to ``predict`` (random bytes, random Unicode with control,
separator and invisible characters, byte-order marks, UTF-16 with and without its mark), NER
files damaged line by line for ``evaluate`` (extra or missing columns, invalid tags, empty tokens,
NUL bytes, invalid UTF-8), and damaged model directories. A ``predict`` result is valid only if
it answers every input line (text) or sentence (CoNLL). Runs on a tiny random model, in a minute:

    python benchmarks/bad_inputs.py --cases 300 --output benchmarks/results/bad_inputs.json
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import random
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from tiny import tiny_model  # noqa: E402

from entangle.cli import main  # noqa: E402
from entangle.data.conll import decoded_lines  # noqa: E402
from entangle.predict import Tagger  # noqa: E402

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
NER = "Peter\tB-PER\nlives\tO\nin\tO\nNew\tB-LOC\nYork\tI-LOC\n\nAnna\tB-PER\nsings\tO\n"
ODD = ["\x00", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u2028", "\u200b", "\u200d", "\ufeff", "\u00ad", "\u0301",
       "\t", "\r", " ", "\n", "é", "ǹ", "😀", "አ", "\U0010ffff", "\ud800"]


def random_text(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(80)))
    chars = [rng.choice(ODD) if rng.random() < 0.3 else chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x3000)]))
             for _ in range(rng.randrange(60))]
    text = "".join(chars)
    if kind == 1:
        return text.encode("utf-8", errors="surrogatepass")  # lone surrogates: invalid UTF-8
    if kind == 2:
        return codecs.BOM_UTF8 + text.encode("utf-8", errors="replace")
    if kind == 3:
        return text.encode("utf-16", errors="replace")  # with its byte-order mark
    return text.encode("utf-16-le", errors="replace")  # without: NUL bytes


def damaged_ner(rng: random.Random) -> bytes:
    lines = NER.splitlines()
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(lines))
        lines[i] = rng.choice([lines[i] + "\tX", lines[i].split("\t")[0], "\tO", "Peter\tB-CITY", "Peter\tI-PER",
                               "Peter\tBX", "\x00\tO", "  \t  ", "-DOCSTART-\tO", lines[i] + rng.choice(ODD)])
    data = "\n".join(lines).encode("utf-8", errors="surrogatepass")
    return data if rng.random() < 0.8 else data + b"\xff\xfe"


def run(argv: list[str]) -> tuple[str, str]:
    """``("valid" | "error" | "traceback", detail)`` of one command."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main(argv)
    except SystemExit as stop:
        if stop.code in (0, None):
            return "valid", ""
        message = str(stop.code)
        clean = message.startswith("entangle ") and "\n" not in message and "Traceback" not in err.getvalue()
        return ("error", message) if clean else ("traceback", message)
    except Exception:  # noqa: BLE001 - what this counts
        return "traceback", traceback.format_exc(limit=3)
    return "valid", ""


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300, help="random cases per input family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp())
    model = root / "model"
    Tagger(*tiny_model(labels=LABELS)).save_pretrained(model)
    counts: dict[str, dict[str, int]] = {}
    examples: dict[str, list[str]] = {}

    def tally(family: str, outcome: str, detail: str) -> None:
        counts.setdefault(family, {"valid": 0, "error": 0, "traceback": 0})[outcome] += 1
        if outcome != "valid" and len(examples.setdefault(f"{family}: {outcome}", [])) < 3:
            examples[f"{family}: {outcome}"].append(detail.replace(str(root), "TMP")[:300])

    for _ in range(args.cases):
        data = random_text(rng)
        (root / "in.txt").write_bytes(data)
        outcome, detail = run(["predict", str(model), "--input", str(root / "in.txt"), "--output", str(root / "out"),
                               "--output-format", "jsonl"])
        if outcome == "valid":  # every input line answered, in order
            answered = len((root / "out").read_text(encoding="utf-8").splitlines())
            if answered != len(list(decoded_lines(root / "in.txt"))):
                outcome, detail = "traceback", f"{answered} results for another number of lines"
        tally("predict, plain text", outcome, detail)
    for _ in range(args.cases):
        (root / "in.conll").write_bytes(random_text(rng) if rng.random() < 0.5 else damaged_ner(rng))
        tally("predict, CoNLL", *run(["predict", str(model), "--input", str(root / "in.conll"), "--input-format",
                                      "conll", "--output", str(root / "out")]))
    for _ in range(args.cases):
        (root / "test.txt").write_bytes(damaged_ner(rng))
        tally("evaluate, damaged NER file", *run(["evaluate", str(model), "--data", str(root / "test.txt")]))
    for damage in ("no weights", "truncated weights", "no config", "truncated config", "no tokenizer", "empty dir",
                   "missing path", "file instead of directory"):
        broken = root / "broken"
        shutil.rmtree(broken, ignore_errors=True)
        shutil.copytree(model, broken)
        target = {"no weights": "model.safetensors", "truncated weights": "model.safetensors", "no config": "config.json",
                  "truncated config": "config.json", "no tokenizer": "tokenizer.json"}.get(damage)
        if damage.startswith("no "):
            (broken / target).unlink()
        elif damage.startswith("truncated"):
            (broken / target).write_bytes((broken / target).read_bytes()[:100])
        elif damage == "empty dir":
            shutil.rmtree(broken)
            broken.mkdir()
        elif damage == "missing path":
            broken = root / "no-such-model"
        else:
            broken = broken / "config.json"
        (root / "in.txt").write_text("Peter lives in Paris\n")
        tally("model directories", *run(["predict", str(broken), "--input", str(root / "in.txt")]))
    shutil.rmtree(root)
    record = {"command": "python " + " ".join(sys.argv), "cases": counts, "examples": examples}
    Path(args.output).write_text(json.dumps(record, indent=2, ensure_ascii=False))
    for family, outcome in counts.items():
        print(f"{family}: {outcome}")


if __name__ == "__main__":
    main_()
