"""Gathers the unlabelled text the shipped character encoder is pretrained on.

Every source is installable here without a hub: Debian packages (install them first with
``apt-get install dict-gcide wordnet-base fortunes debian-reference-en``) and the *training*
splits of TweetEval in ``../shared/data`` (the other labelled datasets' training splits are read
by ``entangle pretrain-char --data``). Nothing from a dev or test split is read. Each source
becomes one text file, one text per line, and ``sources.json`` records its size and licence:

    python benchmarks/pretraining_corpus.py --output runs/corpus
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SOURCES = {
    "tweeteval": ("TweetEval training texts (emoji, emotion, hate, irony, offensive, stance)",
                  "../shared/data/tweeteval", "TweetEval: no restrictions; tweets: Twitter's terms"),
    "gcide": ("GNU Collaborative International Dictionary of English (Webster's 1913 + WordNet), definitions "
              "and quotations", "Debian package dict-gcide", "GPL-3.0-or-later"),
    "wordnet": ("WordNet 3.0 glosses and example sentences", "Debian package wordnet-base", "WordNet 3.0 licence (permissive)"),
    "fortunes": ("fortune cookies (quotations, jokes, definitions)", "Debian package fortunes", "public domain / BSD"),
    "debian-reference": ("Debian Reference manual, English", "Debian package debian-reference-en", "GPL-2.0-or-later"),
}


def _squash(text: str) -> str:
    return " ".join(text.split())


def tweeteval() -> list[str]:
    root = SHARED / "tweeteval"
    return [_squash(line) for path in sorted(root.rglob("train_text.txt"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gcide() -> list[str]:
    """Paragraphs of the dictionary with its markup removed: headword pronunciations
    (``\\Ab*jure"\\``), source tags (``[1913 Webster]``) and cross-reference braces."""
    raw = gzip.open("/usr/share/dictd/gcide.dict.dz", "rt", encoding="utf-8", errors="replace").read()
    texts = []
    for paragraph in re.split(r"\n\s*\n", raw):
        text = re.sub(r"\\[^\\\n]*\\", "", paragraph)
        text = re.sub(r"\[(?:1913 Webster|WordNet 1\.5|PJC|Webster 1913 Suppl\.|RN|Century Dict\.)[^\]]*\]", "", text)
        text = _squash(text.replace("{", "").replace("}", ""))
        if len(text) >= 20 and not text.startswith(("00-database", "gcide")):
            texts.append(text)
    return texts


def wordnet() -> list[str]:
    texts = []
    for part in ("noun", "verb", "adj", "adv"):
        for line in Path(f"/usr/share/wordnet/data.{part}").read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.startswith("  ") and " | " in line:
                texts.append(_squash(line.split(" | ", 1)[1].replace('"', "")))
    return texts


def fortunes() -> list[str]:
    texts = []
    for path in sorted(Path("/usr/share/games/fortunes").glob("*.u8")):
        texts += [_squash(f) for f in path.read_text(encoding="utf-8", errors="replace").split("\n%\n") if f.strip()]
    return texts


def debian_reference() -> list[str]:
    raw = gzip.open("/usr/share/debian-reference/debian-reference.en.txt.gz", "rt", encoding="utf-8").read()
    return [t for t in (_squash(p) for p in re.split(r"\n\s*\n", raw)) if len(t.split()) >= 5]


READERS = {"tweeteval": tweeteval, "gcide": gcide, "wordnet": wordnet, "fortunes": fortunes,
           "debian-reference": debian_reference}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="directory for one .txt file per source and sources.json")
    args = parser.parse_args()
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    record = []
    for name, read in READERS.items():
        texts = read()
        path = output / f"{name}.txt"
        path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
        description, origin, licence = SOURCES[name]
        record.append({"name": name, "file": str(path), "description": description, "origin": origin,
                       "licence": licence, "texts": len(texts), "bytes": path.stat().st_size})
        print(f"{name}: {len(texts)} texts, {path.stat().st_size / 1e6:.1f} MB")
    (output / "sources.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
