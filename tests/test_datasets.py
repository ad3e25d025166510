"""Named datasets: local copies first, otherwise a checksummed download."""

import hashlib
import re

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
            if spec.name not in datasets.UNCHECKED:
                assert len(datasets.CHECKSUMS[relative]) == 64
            assert re.match(r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/", spec.urls[relative])


def test_a_dataset_without_recorded_checksums_is_never_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("ENTANGLE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(UnknownDatasetError, match=r"wnut2020: not found in .*empty/wnut2020.*not downloaded.*"
                                                  r"train\.tsv, valid\.tsv, test\.tsv"):
        dataset_files("wnut2020", data_dir=tmp_path / "empty")
    assert not (tmp_path / "cache").exists()


def test_unknown_name():
    with pytest.raises(UnknownDatasetError, match="known: conll2003"):
        dataset_files("nope")


# WNUT-2020 Task 2's layout, on tweets written for this test: the training and validation files
# start with a header line, the test file does not; a tweet may start with a quotation mark.
WNUT2020 = {
    "train.tsv": "Id\tText\tLabel\n1\tTwo new cases of #COVID19 in Ohio HTTPURL\tINFORMATIVE\n"
                 '2\t"Stay home" they said @USER\tUNINFORMATIVE\n3\tOhio reports 5 deaths\tINFORMATIVE\n',
    "valid.tsv": "Id\tText\tLabel\n4\tA third case confirmed today\tINFORMATIVE\n5\tso bored lol\tUNINFORMATIVE\n",
    "test.tsv": '6\t"Breaking: 12 cases" in Texas\tINFORMATIVE\n7\tmy cat is fine\tUNINFORMATIVE\n',
}


def test_wnut2020_reads_its_own_layout(tmp_path):
    from entangle.data.corpus import load_corpus

    (tmp_path / "wnut2020").mkdir()
    for name, text in WNUT2020.items():
        (tmp_path / "wnut2020" / name).write_text(text)
    corpus = load_corpus("wnut2020", data_dir=tmp_path)
    assert corpus.task == "classification" and corpus.labels == ["INFORMATIVE", "UNINFORMATIVE"]
    assert [len(corpus.train), len(corpus.dev), len(corpus.test)] == [3, 2, 2]
    assert corpus.train[1].text == '"Stay home" they said @USER' and corpus.train[1].label == "UNINFORMATIVE"
    assert corpus.test[0].text == '"Breaking: 12 cases" in Texas' and corpus.test[0].source.endswith("test.tsv:1")


def test_a_wnut2020_line_without_three_fields_is_named(tmp_path):
    from entangle.data.classification import read_wnut2020
    from entangle.data.conll import DataFormatError

    path = tmp_path / "test.tsv"
    path.write_text("6\tfine\tINFORMATIVE\n7\tno label here\n")
    with pytest.raises(DataFormatError, match=r"test\.tsv:2: expected 'Id<TAB>Text<TAB>Label', got 2 tab-separated"):
        read_wnut2020(path)
    path.write_text("6\tfine\tINFORMATIVE\n7\ta typo\tINFORMATVE\n")
    with pytest.raises(DataFormatError, match=r"test\.tsv:2: label 'INFORMATVE' is not one of INFORMATIVE, UNINFORMATIVE"):
        read_wnut2020(path)


def test_the_recorded_checksums_are_those_of_the_shared_copies():
    root = datasets.default_data_dir()
    if root is None:
        pytest.skip("../shared/data is absent: no local copy to compare the recorded checksums with")
    present = [relative for relative in datasets.CHECKSUMS if (root / relative).is_file()]
    assert present, f"{root} holds none of the named datasets' files"
    for relative in present:
        assert datasets.sha256(root / relative) == datasets.CHECKSUMS[relative], relative
