"""Named datasets: local copies first, otherwise a checksummed download."""

import hashlib

import pytest

from entangle.data import datasets
from entangle.data.datasets import ChecksumError, UnknownDatasetError, dataset_files, download


def test_download_keeps_a_file_only_if_its_checksum_matches(tmp_path):
    source = tmp_path / "remote.txt"
    source.write_text("a\tO\n")
    good = hashlib.sha256(source.read_bytes()).hexdigest()
    target = download(source.as_uri(), tmp_path / "cache" / "x.txt", good)
    assert target.read_text() == "a\tO\n"
    with pytest.raises(ChecksumError, match="does not match"):
        download(source.as_uri(), tmp_path / "cache" / "y.txt", "0" * 64)
    assert not list((tmp_path / "cache").glob("y.txt*"))


def test_a_name_without_a_local_copy_is_downloaded_to_the_cache(tmp_path, monkeypatch):
    remote = tmp_path / "remote"
    remote.mkdir()
    spec = datasets.DATASETS["wnut17"]
    checksums = {}
    for split, relative in spec.files.items():
        (remote / split).write_text(f"{split}\tO\n")
        checksums[relative] = hashlib.sha256(f"{split}\tO\n".encode()).hexdigest()
    fake = datasets.DatasetSpec("wnut17", "ner", spec.files, {spec.files[s]: (remote / s).as_uri() for s in spec.files})
    monkeypatch.setitem(datasets.DATASETS, "wnut17", fake)
    monkeypatch.setattr(datasets, "CHECKSUMS", checksums)
    monkeypatch.setenv("ENTANGLE_CACHE", str(tmp_path / "cache"))
    files = dataset_files("wnut17", data_dir=tmp_path / "empty")
    assert files["train"].read_text() == "train\tO\n"
    assert str(files["train"]).startswith(str(tmp_path / "cache"))


def test_every_registered_file_has_a_checksum_and_a_pinned_url():
    for spec in datasets.DATASETS.values():
        for relative in spec.files.values():
            assert len(datasets.CHECKSUMS[relative]) == 64
            assert spec.urls[relative].startswith("https://raw.githubusercontent.com/")


def test_unknown_name():
    with pytest.raises(UnknownDatasetError, match="known: conll2003"):
        dataset_files("nope")
