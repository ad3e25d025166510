"""The column-file reader: formats it accepts, errors with file and line, repairs with a warning."""

import pytest

from entangle.data.conll import DataFormatError, read_conll
from entangle.data.labels import UnknownLabelError, build_labels
from entangle.tasks import get_task
from conftest import shared_data


def write(tmp_path, text: str, name="data.txt", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def test_tab_file_with_whitespace_only_separators(tmp_path):
    path = write(tmp_path, "@paul\tO\nNew\tB-location\nYork\tI-location\n\t\nlol\tO\n \nok\tO\n")
    sentences = read_conll(path)
    assert [s.words for s in sentences] == [["@paul", "New", "York"], ["lol"], ["ok"]]
    assert sentences[0].tags == ["O", "B-location", "I-location"]
    assert sentences[1].source == f"{path}:5"


def test_space_file_with_docstart_bom_and_chosen_columns(tmp_path):
    text = "\ufeff-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n\nPeter NNP B-NP B-PER\n"
    path = write(tmp_path, text)
    sentences = read_conll(path)
    assert [s.words for s in sentences] == [["EU", "rejects"], ["Peter"]]
    assert sentences[0].tags == ["B-ORG", "O"]
    pos = read_conll(path, token_column=0, tag_column=1, scheme=None)
    assert pos[0].tags == ["NNP", "VBZ"]


def test_words_only(tmp_path):
    path = write(tmp_path, "hello\nworld\n\nagain\n")
    assert [(s.words, s.tags) for s in read_conll(path, tag_column=None)] == [(["hello", "world"], None), (["again"], None)]


@pytest.mark.parametrize("text, line, message", [
    ("a\tO\nb\tO\textra\n", 2, "expected 2 columns"),
    ("a O\nb\n", 2, "expected 2 columns"),
    ("a\tO\nb\tB_PER\n", 2, "not a valid IOB2 tag"),
    ("a\tO\n\nb\tPER\n", 3, "not a valid IOB2 tag"),
    ("a\tO\n\tO\n", 2, "empty token"),
])
def test_errors_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(DataFormatError, match=message) as error:
        read_conll(path)
    assert str(error.value).startswith(f"{path}:{line}:")
    assert error.value.line == line


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"a\tO\n\xff\xfe\tO\n")
    with pytest.raises(DataFormatError, match=r"bad.txt:2: not valid UTF-8"):
        read_conll(path)


def test_missing_tag_column(tmp_path):
    path = write(tmp_path, "a\tO\n")
    with pytest.raises(DataFormatError, match="tag column 3 does not exist"):
        read_conll(path, tag_column=3)


def test_i_without_b_is_repaired_with_a_warning(tmp_path):
    path = write(tmp_path, "a\tI-PER\nb\tI-PER\nc\tI-LOC\nd\tO\n")
    with pytest.warns(UserWarning, match=r"repaired 2 I- tag\(s\).*lines 1, 3"):
        [sentence] = read_conll(path)
    assert sentence.tags == ["B-PER", "I-PER", "B-LOC", "O"]


def test_labels_unseen_in_training_are_listed(tmp_path):
    train = read_conll(write(tmp_path, "a\tB-PER\nb\tO\n", "train.txt"))
    dev = read_conll(write(tmp_path, "a\tB-ORG\n\nb\tB-MISC\nc\tI-MISC\n", "dev.txt"))
    labels = build_labels(train, "ner")
    assert labels == ["O", "B-PER", "I-PER"]
    with pytest.raises(UnknownLabelError, match=r"3 label\(s\).*'B-MISC'.*dev.txt:3.*'B-ORG'.*dev.txt:1.*'I-MISC'"):
        get_task("ner").check_labels(dev, labels, "the dev set")


@pytest.mark.parametrize("relative, sentences", [
    ("wnut17/wnut17train.conll", 3394),
    ("wnut17/emerging.dev.conll", 1009),
    ("wnut17/emerging.test.annotated", 1287),
    ("conll2003/iob2/train.txt", 14041),
    ("conll2003/iob2/dev.txt", 3250),
    ("conll2003/iob2/test.txt", 3453),
])
def test_reads_the_real_english_ner_sets(relative, sentences):
    assert len(read_conll(shared_data(relative))) == sentences


@pytest.mark.parametrize("language", ["amh", "hau", "ibo", "kin", "lug", "luo", "pcm", "swa", "wol", "yor"])
def test_reads_every_masakhaner_language(language, recwarn):
    for split in ("train", "dev", "test"):
        sentences = read_conll(shared_data("masakhaner", language, f"{split}.txt"))
        assert sentences and all(len(s.words) == len(s.tags) for s in sentences)
        assert set(build_labels(sentences, "ner")) <= {"O"} | {f"{p}-{t}" for p in "BI" for t in ("PER", "ORG", "LOC", "DATE")}
    assert not sentences[0].words[0].startswith("\ufeff")


def test_ragged_lines_read_their_own_first_and_last_columns(tmp_path):
    """CharBERT's CharAttack files: a perturbed token may hold the column separator."""
    path = tmp_path / "attack.txt"
    path.write_text("Peter B-PER\nlives O\nin New Yrok B-LOC\nbut O\n")
    with pytest.raises(DataFormatError, match=r"attack.txt:3: expected 2 columns \(as on line 1\), found 4.*--ragged-columns"):
        read_conll(path)
    [sentence] = read_conll(path, ragged=True)
    assert sentence.words == ["Peter", "lives", "in", "but"] and sentence.tags == ["B-PER", "O", "B-LOC", "O"]
    path.write_text("Peter B-PER\nlives\n")
    with pytest.raises(DataFormatError, match=r"attack.txt:2: 1 column\(s\): too few for token column 0 and tag column -1"):
        read_conll(path, ragged=True)
