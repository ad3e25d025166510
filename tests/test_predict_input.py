"""`entangle predict` on awkward input: every input line answered in order, odd characters inside a
line, encodings, empty input; and the text -> words rule itself, fuzzed."""

import codecs
import errno
import io
import json
import os
import re
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from entangle.cli import main
from entangle.data.conll import DataFormatError, decoded_lines
from entangle.data.words import split_words
from entangle import predict as predict_module
from entangle.predict import Tagger
from tiny import tiny_model

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("model")
    Tagger(*tiny_model(labels=LABELS)).save_pretrained(path)
    return path


def predict(model_dir, tmp_path, data: bytes, *options: str) -> str:
    (tmp_path / "in.txt").write_bytes(data)
    main(["predict", str(model_dir), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out"), *options])
    return (tmp_path / "out").read_text(encoding="utf-8")


def assert_same_output(got: str, expected: str) -> None:
    """The same text, but for a probability's last printed digit: padding to another batch changes
    float sums by ~1e-7, which can round the sixth decimal the other way."""
    number = re.compile(r"\d+\.\d+")
    assert number.sub("#", got) == number.sub("#", expected)
    assert [float(x) for x in number.findall(got)] == pytest.approx([float(x) for x in number.findall(expected)], abs=2e-6)


def test_every_input_line_gets_its_own_result_in_order(model_dir, tmp_path):
    text = "Peter lives in Paris\n\n   \nAnna sings\n".encode()
    rows = [json.loads(line) for line in predict(model_dir, tmp_path, text, "--output-format", "jsonl").splitlines()]
    assert [r["words"] for r in rows] == [["Peter", "lives", "in", "Paris"], [], [], ["Anna", "sings"]]
    assert all(len(r["labels"]) == len(r["words"]) == len(r["probabilities"]) for r in rows)
    sentences, words = [], []
    for row in predict(model_dir, tmp_path, text).splitlines():  # each sentence ends with a blank line
        if row:
            words.append(row.split("\t")[0])
        else:
            sentences, words = sentences + [words], []
    assert sentences == [["Peter", "lives", "in", "Paris"], [], [], ["Anna", "sings"]] and not words


@pytest.mark.parametrize("separator", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "\u2029",
                                       "\u200b", "\t", "\r"])
def test_separators_inside_a_line_split_words_not_lines(model_dir, tmp_path, separator):
    rows = predict(model_dir, tmp_path, f"hello{separator}world\n".encode(), "--output-format", "jsonl").splitlines()
    assert [json.loads(r)["words"] for r in rows] == [["hello", "world"]]


def test_an_emoji_keeps_its_variation_selector_and_a_url_its_scheme_in_any_case():
    """U+FE0F after ❤ was a word of its own, invisible and given no subword; HTTPS:// was cut up."""
    assert split_words("I ❤️ NY *️⃣") == ["I", "❤\ufe0f", "NY", "*\ufe0f\u20e3"]
    assert split_words("see HTTPS://x.co/ab or Www.example.com") == ["see", "HTTPS://x.co/ab", "or", "Www.example.com"]


def test_an_emoji_sequence_is_one_word():
    """A skin tone, a family joined by U+200D and a flag were two to five words, each half a symbol."""
    family, rainbow = "👩\u200d👩\u200d👧", "🏳\ufe0f\u200d🌈"
    assert split_words(f"great👍🏽 {family} {rainbow} 🇩🇪🇫🇷!!") == ["great", "👍🏽", family, rainbow, "🇩🇪", "🇫🇷", "!", "!"]
    assert split_words("!\u0e33abc") == ["!", "\u0e33abc"]  # a grapheme cluster, but a letter: not the symbol's
    # England's flag: U+1F3F4 and "gbeng" in tag characters (format characters, which other words lose).
    england = "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in "gbeng") + "\U000e007f"
    assert split_words(f"go {england}{england} now") == ["go", england, england, "now"]
    assert split_words("a\U000e0067\U000e0062b \U000e0067 c") == ["a" + "b", "c"]  # stray tags: removed, as before


def test_a_zero_width_space_alone_is_no_word():
    assert split_words("New \u200b York \u200d") == ["New", "York"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_wide_unicode_with_a_byte_order_mark_is_read(model_dir, tmp_path, encoding):
    bom = {"utf-16": b"", "utf-16-be": codecs.BOM_UTF16_BE, "utf-32": b""}[encoding]
    data = bom + "Peter lives in Zürich\nAnna\n".encode(encoding)
    rows = [json.loads(r) for r in predict(model_dir, tmp_path, data, "--output-format", "jsonl").splitlines()]
    assert [r["words"] for r in rows] == [["Peter", "lives", "in", "Zürich"], ["Anna"]]


@pytest.mark.parametrize("data, message", [
    (b"ok\n\xff\xfe\xfa broken\n", r"in.txt:2: not valid UTF-8 \(invalid start byte at byte 0\); text files must be UTF-8"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"in.txt:3: NUL bytes: not a text file"),
    ("Peter\n".encode("utf-16-le"), r"in.txt:1: NUL bytes: not a text file \(binary, or UTF-16/32 without its byte-order mark\)"),
])
def test_bytes_that_are_not_text_give_one_line_naming_the_file_and_line(model_dir, tmp_path, capsys, data, message):
    with pytest.raises(SystemExit, match=message) as raised:
        predict(model_dir, tmp_path, data)
    assert "\n" not in str(raised.value.code) and "Traceback" not in capsys.readouterr().err


def test_empty_input_is_one_clear_error(model_dir, tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match=r"in.txt: no text to tag \(the input is empty\)"):
        predict(model_dir, tmp_path, b"")


def test_blank_lines_classified_in_place(tmp_path):
    path = tmp_path / "classifier"
    Tagger(*tiny_model(labels=["neg", "pos"], task="classification")).save_pretrained(path)
    (tmp_path / "in.txt").write_text("good day\n\nbad\tday\u2028now\n")
    main(["predict", str(path), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out")])
    lines = (tmp_path / "out").read_text().splitlines()
    assert [line.split("\t")[2:] for line in lines] == [["good day"], [], ["bad day now"]]  # a text stays one column
    assert lines[1] == "" and lines[0].split("\t")[0] in ("neg", "pos")


def test_the_api_tags_empty_sentences_as_empty(model_dir):
    tagger = Tagger.from_pretrained(model_dir)
    tagged = tagger.tag([[], ["Paris"], []])
    assert [t.labels for t in tagged][0] == [] and len(tagged[1].labels) == 1 and tagged[2].labels == []


def test_lines_end_only_at_newline(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"a\x0bb\r\nc\x1cd\n\ne")
    assert list(decoded_lines(path)) == [(1, "a\x0bb"), (2, "c\x1cd"), (3, ""), (4, "e")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_split_words_gives_visible_words_only(text):
    """Arbitrary Unicode: no word is empty, holds a space or control character, or is invisible only."""
    for word in split_words(text):
        assert word and word.strip() == word and not any(c.isspace() for c in word)
        assert word not in ("\u200c", "\u200d") and len(split_words(word)) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=80))
def test_predict_on_arbitrary_bytes_answers_or_fails_cleanly(model_dir, tmp_path, data):
    """Every byte string either gives one result per line or one error line naming the file."""
    try:
        out = predict(model_dir, tmp_path, data, "--output-format", "jsonl")
    except SystemExit as stop:
        assert str(stop.code).startswith("entangle predict: error: ") and "\n" not in str(stop.code)
        return
    lines = list(decoded_lines(tmp_path / "in.txt"))
    assert len(out.splitlines()) == len(lines)


def test_decoded_lines_reports_the_line_of_a_bad_utf16_sequence(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + "ok\nok\n".encode("utf-16-le") + b"\x00\xdc")  # a lone low surrogate
    with pytest.raises(DataFormatError, match=r"x.txt:3: not valid UTF-16 \(little-endian\)"):
        list(decoded_lines(path))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=40), min_size=1, max_size=4))
def test_tag_text_labels_every_word_of_arbitrary_unicode(model_dir, texts):
    tagger = Tagger.from_pretrained(model_dir)
    for text, tagged in zip(texts, tagger.tag_text(texts)):
        assert tagged.words == split_words(text) and len(tagged.labels) == len(tagged.words)


def test_predict_runs_where_it_is_told(model_dir, tmp_path):
    tagger = Tagger.from_pretrained(model_dir)  # "auto": the GPU when there is one
    assert tagger.model.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert Tagger.from_pretrained(model_dir, device="cpu").model.device.type == "cpu"
    rows = predict(model_dir, tmp_path, b"Peter lives in Paris\n", "--device", "cpu", "--output-format", "jsonl")
    assert len(json.loads(rows)["labels"]) == 4


def test_streamed_predictions_are_the_one_shot_ones_read_lazily(model_dir, monkeypatch):
    """``predict_stream`` on a chunk of 2 sentences gives what ``predict`` gives on the whole input,
    in order (empty sentences and a sentence longer than a window included), and has read no more
    than one chunk ahead when its first prediction comes out."""
    monkeypatch.setattr(predict_module, "STREAM_BATCHES", 1)
    tagger = Tagger.from_pretrained(model_dir, batch_size=2)
    sentences = [["Peter", "lives", "in", "Paris"], [], ["Anna"], ["word"] * 300, [], ["New", "York", "lol"], ["x"]]
    pulled = []

    def lazily():
        for sentence in sentences:
            pulled.append(sentence)
            yield sentence

    stream = tagger.predict_stream(lazily())
    first = next(stream)
    assert len(pulled) == 2
    streamed = [first, *stream]
    assert [t.to_json() for t in streamed] == [t.to_json() for t in tagger.predict(sentences)]


def test_the_command_line_predicts_chunk_by_chunk_as_in_one_go(model_dir, tmp_path, monkeypatch):
    text = "Peter lives in Paris\n\nAnna sings\nlol sooo gooood\n\nNew York\n".encode()
    whole = predict(model_dir, tmp_path, text, "--output-format", "jsonl")
    monkeypatch.setattr(predict_module, "STREAM_BATCHES", 1)
    assert_same_output(predict(model_dir, tmp_path, text, "--output-format", "jsonl", "--batch-size", "1"), whole)
    assert len(whole.splitlines()) == 6


def test_a_classifier_streams_each_line_beside_its_own_text(tmp_path, monkeypatch):
    path = tmp_path / "classifier"
    Tagger(*tiny_model(labels=["neg", "pos"], task="classification")).save_pretrained(path)
    (tmp_path / "in.txt").write_text("good day\n\nbad  day\nok\n")
    main(["predict", str(path), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "whole")])
    monkeypatch.setattr(predict_module, "STREAM_BATCHES", 1)
    main(["predict", str(path), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out"), "--batch-size", "1"])
    lines = (tmp_path / "out").read_text().split("\n")
    assert [line.split("\t")[-1] for line in lines] == ["good day", "", "bad  day", "ok", ""]
    assert_same_output((tmp_path / "out").read_text(), (tmp_path / "whole").read_text())


def test_a_classifier_reads_the_words_it_is_given_not_its_text_split_again():
    """A soft hyphen or zero-width space is a word to the model (a CoNLL file may hold one); split
    again from the text, it vanished, and predict failed where probabilities answered."""
    tagger = Tagger(*tiny_model(labels=["neg", "pos"], task="classification"))
    sentences = [["\u00ad"], ["good", "\u200b"]]
    [alone, good] = tagger.predict(sentences)
    expected = tagger.probabilities(sentences)[tagger.model.config.predict_side]
    assert alone.text == "\u00ad" and alone.probability == pytest.approx(float(expected[0][0].max()))
    assert good.distribution["pos"] == pytest.approx(float(expected[1][0][1]))


def test_a_side_named_twice_counts_once(model_dir):
    tagger = Tagger.from_pretrained(model_dir)
    twice = tagger.probabilities([["Peter", "lives"]], ("subword", "subword"))["subword"][0]
    assert torch.allclose(twice.sum(-1), torch.ones(2))


def test_a_classifier_is_given_one_text_per_sentence(tmp_path):
    tagger = Tagger(*tiny_model(labels=["neg", "pos"], task="classification"))
    with pytest.raises(ValueError, match="the texts ran out at sentence 1: give one text per sentence"):
        list(tagger.predict_stream([["good"], ["bad"]], texts=["good"]))


def test_a_conllu_file_read_as_conll_is_refused(model_dir, tmp_path):
    """Its ID column became the words, silently, or its comment lines an error whose hint misread it too."""
    (tmp_path / "x.conllu").write_text("1\tPeter\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    with pytest.raises(SystemExit, match="x.conllu: a CoNLL-U file by its suffix, read as CoNLL: give --input-format conllu"):
        main(["predict", str(model_dir), "--input", str(tmp_path / "x.conllu"), "--input-format", "conll"])


class _BinaryStdin(io.TextIOWrapper):
    """A standard input that holds ``data``; no ``/dev/stdin`` behind it, as on Windows."""

    def __init__(self, data: bytes):
        super().__init__(io.BytesIO(data), encoding="utf-8")


@pytest.mark.parametrize("input_format, data, words", [
    ("text", "Peter lives in Paris\n".encode(), ["Peter", "lives", "in", "Paris"]),
    ("conll", b"Peter\nsings\n\n", ["Peter", "sings"]),
    ("conllu", b"# text = Anna sings\n1\tAnna\t_\t_\t_\t_\t_\t_\t_\t_\n2\tsings\t_\t_\t_\t_\t_\t_\t_\t_\n\n",
     ["Anna", "sings"]),
])
def test_standard_input_is_read_from_sys_stdin(model_dir, tmp_path, monkeypatch, input_format, data, words):
    """--input - opened /dev/stdin, which Windows does not have (and which skipped a replaced sys.stdin)."""
    monkeypatch.setattr("sys.stdin", _BinaryStdin(data))
    main(["predict", str(model_dir), "--input", "-", "--input-format", input_format, "--output-format", "jsonl",
          "--output", str(tmp_path / "out")])
    assert json.loads((tmp_path / "out").read_text())["words"] == words


@pytest.mark.skipif(sys.platform == "win32", reason="Windows file names cannot hold < or >")
@pytest.mark.parametrize("input_format, data, words", [
    ("text", "Peter lives in Paris\n".encode(), ["Peter", "lives", "in", "Paris"]),
    ("conll", b"Peter\nsings\n\n", ["Peter", "sings"]),
    ("conllu", b"1\tAnna\t_\t_\t_\t_\t_\t_\t_\t_\n2\tsings\t_\t_\t_\t_\t_\t_\t_\t_\n\n", ["Anna", "sings"]),
])
def test_a_file_named_like_standard_input_is_read_as_a_file(model_dir, tmp_path, monkeypatch, input_format, data,
                                                              words):
    """Standard input's name in messages, ``<stdin>``, was also the path that read it: such a file was never read."""
    (tmp_path / "<stdin>").write_bytes(data)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", _BinaryStdin(b"not this\n"))
    main(["predict", str(model_dir), "--input", "<stdin>", "--input-format", input_format, "--output-format", "jsonl",
          "--output", "out"])
    assert json.loads((tmp_path / "out").read_text())["words"] == words


def test_bad_standard_input_is_named_as_such(model_dir, monkeypatch):
    monkeypatch.setattr("sys.stdin", _BinaryStdin(b"fine\n\xff\n"))
    with pytest.raises(SystemExit, match="<stdin>:2: not valid UTF-8"):
        main(["predict", str(model_dir), "--input", "-"])


def test_a_closed_standard_input_is_one_line(model_dir, monkeypatch):
    """Closed (`0<&-`, or pythonw's), sys.stdin is None: reading it raised an AttributeError traceback."""
    monkeypatch.setattr("sys.stdin", None)
    with pytest.raises(SystemExit, match="<stdin>: standard input is closed"):
        main(["predict", str(model_dir), "--input", "-"])


def test_a_conllu_copy_of_a_pipe_is_refused_in_one_line(model_dir, tmp_path):
    """The copy reads the input again: from a pipe or <(...) it read nothing and raised a traceback."""
    # A device stands in for a pipe, which a test could not open without a writer on the other side.
    with pytest.raises(SystemExit, match=f"--input {os.devnull} is not a regular file"):
        main(["predict", str(model_dir), "--input", os.devnull, "--input-format", "conllu",
              "--output-format", "conllu", "--output", str(tmp_path / "out.conllu")])


def test_standard_output_is_utf8_whatever_its_locale(model_dir, tmp_path, monkeypatch):
    """Under an ASCII or Latin-1 stdout a word outside its charset raised UnicodeEncodeError mid-output."""
    raw = io.BytesIO()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(raw, encoding="ascii"))
    (tmp_path / "in.txt").write_text("Zürich ist schön\n", encoding="utf-8")
    main(["predict", str(model_dir), "--input", str(tmp_path / "in.txt"), "--output-format", "jsonl"])
    assert json.loads(raw.getvalue().decode("utf-8"))["words"] == ["Zürich", "ist", "schön"]


class _ClosedPipe:
    """A stdout whose reader has gone (`entangle predict ... | head -1`), failing as `error` says."""

    def __init__(self, path, error):
        self.file = open(path, "w")
        self.error = error

    def write(self, text):
        raise self.error

    def flush(self):
        pass

    def fileno(self):
        return self.file.fileno()


_EPIPE = BrokenPipeError(errno.EPIPE, "Broken pipe")
_EINVAL = OSError(errno.EINVAL, "Invalid argument")


@pytest.mark.parametrize("error, platform, quiet", [(_EPIPE, sys.platform, True), (_EINVAL, "win32", True),
                                                     (_EINVAL, "linux", False)])
def test_a_closed_output_pipe_stops_quietly(model_dir, tmp_path, monkeypatch, capsys, error, platform, quiet):
    """Windows may report a closed pipe as EINVAL (python/cpython#79935); elsewhere EINVAL is an error."""
    (tmp_path / "in.txt").write_text("Peter lives in Paris\n")
    pipe = _ClosedPipe(tmp_path / "stdout", error)
    monkeypatch.setattr("sys.stdout", pipe)
    monkeypatch.setattr("sys.platform", platform)
    with pytest.raises(SystemExit) as stopped:
        main(["predict", str(model_dir), "--input", str(tmp_path / "in.txt")])
    pipe.file.close()
    if quiet:
        assert stopped.value.code == 1 and capsys.readouterr().err == ""  # was "error: [Errno 32] Broken pipe"
    else:
        assert "error: [Errno 22] Invalid argument" in str(stopped.value.code)
