"""Datasets by name: a local copy when there is one, otherwise a checksummed download.

``--data wnut17`` looks for ``<data dir>/wnut17/...`` (the data dir is ``--data-dir``, else
``$ENTANGLE_DATA_DIR``, else ``../shared/data`` when it exists) and otherwise downloads the
files from the dataset's public repository at a fixed commit into ``~/.cache/entangle``,
verifying each file's SHA-256.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

SPLITS = ("train", "dev", "test")

# SHA-256 of every file, by its path under the data directory.
CHECKSUMS = {
    "conll2003/iob2/dev.txt": "c02eb19809eafb83998326a0481942eb37d96f31826ae387cfe8773699969f5b",
    "conll2003/iob2/test.txt": "dc4ac7f3d6d01a6bec59261814561da3b287b6b493b97d1f69c580b52ec1831b",
    "conll2003/iob2/train.txt": "213953b5522fb7924802d883e50f027b2c6ffb5d4d0e63368ed82909f9b60423",
    "masakhaner/amh/dev.txt": "f7561345b55d41ccf472c1306e0a0a8f8bc3d46ac535f5dee3d1da3f1a0bb816",
    "masakhaner/amh/test.txt": "3968ef19c31c480859364f927ac6370ae5c33c9557437e87c0b6f7801df461b6",
    "masakhaner/amh/train.txt": "44d6e06d6bedd2b902578ae658fc3ad6548b8876166a821893d081393a92afe4",
    "masakhaner/hau/dev.txt": "a4695528b190c629f417e66feda127650611ee8d0f0d0ce14dee8f1506da0f7f",
    "masakhaner/hau/test.txt": "1f636716cb1633490bc475951721d81a637b033045123f3ee84fee2a1ea06c70",
    "masakhaner/hau/train.txt": "f09523f77aacc7d89e935ce8fdd0d7d6afb7ba06e4a6040a431f295b0b937939",
    "masakhaner/ibo/dev.txt": "059e81794392a659efd65218ae988ff4ae680cd5beceae84caa5a8658767e8ee",
    "masakhaner/ibo/test.txt": "ecfc765813ac82b5807e3cf00e26020ec971e5ebd93c71e172c7f48df427d818",
    "masakhaner/ibo/train.txt": "9731a5268749b43c5f1c7ac1f420aa7b856cbe2a0002b14dd1d2f809257612bb",
    "masakhaner/kin/dev.txt": "2adff8ef6a84927a9ebf68760feaffba8ff4d220fde89d6da88e084287c6cae9",
    "masakhaner/kin/test.txt": "d49c012b50ef2e1e5f6e424f4348d18ebc171298dd0eb34ec5a000a353f3d98f",
    "masakhaner/kin/train.txt": "46960b853d33b08759ec04dea5ba390ac196573b9fb868556aa3ed9ecd613d5a",
    "masakhaner/lug/dev.txt": "654a457c9c7aaba690a6cab0a72390605288fd46668e3c17fa5f84596bbc740c",
    "masakhaner/lug/test.txt": "6b8b327cecc61d7228be95331e6bf3bbdeea84a3d023172359f0aa1c89b52ecc",
    "masakhaner/lug/train.txt": "5884e3c4be037b37dec9c1d60125638dad3510c81f903402d9c31f023deaf7fa",
    "masakhaner/luo/dev.txt": "37a270c722d1c5462907222bf3ff1cf2453075490f00867a4c8d90838080416a",
    "masakhaner/luo/test.txt": "9342c9a99a17b08daee32fe9ed414ab1e4810db886ba4e8b1c9f5522438479df",
    "masakhaner/luo/train.txt": "a676dba1a88bfbf352150145855252f7c47c271c37da8c2d09fb3560e899fcd9",
    "masakhaner/pcm/dev.txt": "34e2dc4868718fbb3646f2d65d3e7802866d4c17bde005ff28bfc3960de2f0bc",
    "masakhaner/pcm/test.txt": "de0dc15f4f74adff9486d03897354ef30ded9bedb73e058a96e3d1bd0a0c85fc",
    "masakhaner/pcm/train.txt": "7fbb8bc4f0b456e6283624d05a1bfd0e331c580ebf9564815d6f5b7453588272",
    "masakhaner/swa/dev.txt": "ee742c38cba9139f1a147baffe7d294d6e38599c67a66ec896500ac2666f53d3",
    "masakhaner/swa/test.txt": "f91b97def896572dfaaf6db247a01cc1a8b7bd2ce537c19956ec0a0a1ac5913c",
    "masakhaner/swa/train.txt": "3fbefb76d97a652a29c6f856946af60e31a92ad82927bb748092c5be1b96cb08",
    "masakhaner/wol/dev.txt": "48517a2ad733938805be4bdd285518bed75f14d62068abed74c7eece550e9630",
    "masakhaner/wol/test.txt": "4791d2b105f1022c6b9180b7d96d10d4daa864d7f7087f1822b55ddbdd22b931",
    "masakhaner/wol/train.txt": "160b946c5944313135cd0893030f9f2e5f305e1195e763124bfffd30eac787e8",
    "masakhaner/yor/dev.txt": "6fd8ba4c586606a08669ca56954185092f419ddf9c2c4d950815a1cb03af3832",
    "masakhaner/yor/test.txt": "fbace84a8b7cc0c4078f1600a2408b06b3d182977bb64d55318590cba56c2058",
    "masakhaner/yor/train.txt": "8baf42a3231ab6f10ce7ed5ed434a5a5447634d1cdf979ac932b2496e3566784",
    "tweebank_v2/en-ud-tweet-dev.conllu": "3950416f04a540f72b5252d3db354171860831c197c2c04b40c33325a476fa35",
    "tweebank_v2/en-ud-tweet-test.conllu": "64b32264bc6475049335178f6d51be1d2be0cf86b8636022471a796e59305c41",
    "tweebank_v2/en-ud-tweet-train.conllu": "ff92d8947dabd41850057dd3a05b32f48610b2e084be4991162b79ea1be8f46d",
    "wnut17/emerging.dev.conll": "e053b752b8155113ca66e7db08af5f2f5f43ab993694e4774f1ec5bad42312d8",
    "wnut17/emerging.test.annotated": "2aa79b764e56ec9264a1b30fdd9b70195bd00ff400b62edd8f399d5f13c178f0",
    "wnut17/wnut17train.conll": "731820e13f71af324c6b55a1575ec2ce59fbaa2a0806f8f0400b98d56cd6a7a5",
}

MASAKHANER_LANGUAGES = ("amh", "hau", "ibo", "kin", "lug", "luo", "pcm", "swa", "wol", "yor")


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    task: str
    #: split -> path under the data directory
    files: dict[str, str]
    #: path under the data directory -> download URL
    urls: dict[str, str]
    token_column: int = 0
    tag_column: int = -1


def _spec(name: str, files: dict[str, str], base_url: str, url_paths: dict[str, str], task: str = "ner") -> DatasetSpec:
    return DatasetSpec(name, task, files, {files[s]: base_url + url_paths[s] for s in files})


DATASETS: dict[str, DatasetSpec] = {
    "wnut17": _spec(
        "wnut17",
        {"train": "wnut17/wnut17train.conll", "dev": "wnut17/emerging.dev.conll", "test": "wnut17/emerging.test.annotated"},
        "https://raw.githubusercontent.com/leondz/emerging_entities_17/e52a2d2a71ac1a051ca2d532eef28653c5c02603/",
        {"train": "wnut17train.conll", "dev": "emerging.dev.conll", "test": "emerging.test.annotated"},
    ),
    "conll2003": _spec(
        "conll2003",
        {split: f"conll2003/iob2/{split}.txt" for split in SPLITS},
        "https://raw.githubusercontent.com/kyzhouhzau/BERT-NER/0f77e478872453df51cd3c65d1a39b12d9617f9d/old_version/NERdata/",
        {split: f"{split}.txt" for split in SPLITS},
    ),
    # POS tagging of tweets: UPOS of the syntactic words (CoNLL-U).
    "tweebank": _spec(
        "tweebank",
        {split: f"tweebank_v2/en-ud-tweet-{split}.conllu" for split in SPLITS},
        "https://raw.githubusercontent.com/Oneplus/Tweebank/2bdd029fb16321c715c00480b7df58df22901e18/",
        {split: f"en-ud-tweet-{split}.conllu" for split in SPLITS},
        task="tagging",
    ),
}
for _language in MASAKHANER_LANGUAGES:
    DATASETS[f"masakhaner-{_language}"] = _spec(
        f"masakhaner-{_language}",
        {split: f"masakhaner/{_language}/{split}.txt" for split in SPLITS},
        "https://raw.githubusercontent.com/masakhane-io/masakhane-ner/ba5843cd08aa491d5f96a5e809e71eb9ec461391/data/",
        {split: f"{_language}/{split}.txt" for split in SPLITS},
    )


class ChecksumError(RuntimeError):
    """A downloaded file is not the expected one."""


class UnknownDatasetError(ValueError):
    pass


def default_data_dir() -> Path | None:
    if "ENTANGLE_DATA_DIR" in os.environ:
        return Path(os.environ["ENTANGLE_DATA_DIR"])
    shared = Path("../shared/data")
    return shared if shared.is_dir() else None


def cache_root() -> Path:
    """Where downloads and conversions go: ``$ENTANGLE_CACHE``, else ``~/.cache/entangle``."""
    return Path(os.environ.get("ENTANGLE_CACHE", Path.home() / ".cache" / "entangle"))


def cache_dir() -> Path:
    return cache_root() / "datasets"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str, target: Path, expected_sha256: str) -> Path:
    """Fetch ``url`` to ``target`` through a temporary file, keeping it only if the checksum matches."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as handle:
        while block := response.read(1 << 20):
            handle.write(block)
    actual = sha256(partial)
    if actual != expected_sha256:
        partial.unlink()
        raise ChecksumError(f"{url}: SHA-256 {actual} does not match the expected {expected_sha256}")
    partial.replace(target)
    return target


def dataset_files(name: str, data_dir: str | Path | None = None) -> dict[str, Path]:
    """split -> local path of a named dataset, downloading what is not found locally."""
    if name not in DATASETS:
        raise UnknownDatasetError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    spec = DATASETS[name]
    local = Path(data_dir) if data_dir is not None else default_data_dir()
    files = {}
    for split, relative in spec.files.items():
        if local is not None and (local / relative).is_file():
            files[split] = local / relative
            continue
        cached = cache_dir() / relative
        if not cached.is_file() or sha256(cached) != CHECKSUMS[relative]:
            download(spec.urls[relative], cached, CHECKSUMS[relative])
        files[split] = cached
    return files
