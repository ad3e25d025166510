"""Input the readers once misread: each is now read as meant, or refused with its file and line."""

import json

import pytest

from entangle.cli import main
from entangle.data.classification import read_table
from entangle.data.conll import DataFormatError, read_conll, rewrite_tokens
from entangle.data.corpus import load_corpus
from entangle.options import UsageError


def write(tmp_path, text: str, name="data.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_tab_columns_lose_their_surrounding_whitespace(tmp_path):
    path = write(tmp_path, "Rome\tNOUN \n Paris \tNOUN\nNew York\t PROPN\n")
    sentence, = read_conll(path, scheme=None)
    assert sentence.words == ["Rome", "Paris", "New York"] and sentence.tags == ["NOUN", "NOUN", "PROPN"]


def test_a_padded_docstart_is_skipped_and_rewritten_in_place(tmp_path):
    path = write(tmp_path, "-DOCSTART- \tO\n\nRome\tB-LOC \n")
    assert [s.words for s in read_conll(path)] == [["Rome"]]
    rewrite_tokens(path, tmp_path / "out.txt", ["ROME"])
    assert (tmp_path / "out.txt").read_text() == "-DOCSTART- \tO\n\nROME\tB-LOC \n"  # other columns as they were


@pytest.mark.parametrize("token_column, tag_column", [(1, 1), (-1, -1), (1, -2), (2, -1)])
def test_the_token_column_cannot_be_the_tag_column(tmp_path, token_column, tag_column):
    path = write(tmp_path, "\nEU\tNNP\tB-ORG\nrejects\tVBZ\tO\n")
    with pytest.raises(DataFormatError, match=rf"^{path}:2: the token column {token_column} and the tag column "
                                              rf"{tag_column} are the same column \(lines have 3 columns\)"):
        read_conll(path, token_column, tag_column, scheme=None)


def test_tsv_quotes_are_text(tmp_path):
    path = write(tmp_path, 'text\tlabel\n"quoted" rest\tpos\nan "open quote\tneg\nnext row\tpos\n', "data.tsv")
    examples = read_table(path)
    assert [(e.text, e.label, e.source) for e in examples] == [
        ('"quoted" rest', "pos", f"{path}:2"), ('an "open quote', "neg", f"{path}:3"), ("next row", "pos", f"{path}:4")]


def test_csv_keeps_standard_quoting(tmp_path):
    path = write(tmp_path, 'text,label\n"one, two",pos\n"across\nlines",neg\n', "data.csv")
    assert [(e.text, e.label, e.source) for e in read_table(path)] == [
        ("one, two", "pos", f"{path}:2"), ("across\nlines", "neg", f"{path}:4")]


@pytest.mark.parametrize("name", ["data.tsv", "data.csv"])
def test_a_repeated_header_column_is_named(tmp_path, name):
    separator = "\t" if name.endswith(".tsv") else ","
    path = write(tmp_path, separator.join(["text", "label", "text"]) + "\n" + separator.join(["a", "pos", "b"]) + "\n",
                 name)
    with pytest.raises(DataFormatError, match=rf"^{path}:1: the header has column 'text' more than once"):
        read_table(path)


@pytest.mark.parametrize("name", ["data.tsv", "data.csv"])
def test_a_text_over_the_csv_field_limit_is_read(tmp_path, name):
    separator = "\t" if name.endswith(".tsv") else ","
    long_text = " ".join(["word"] * 40_000)  # 199,999 characters: over csv's default 131,072
    path = write(tmp_path, f"text{separator}label\n{long_text}{separator}pos\n", name)
    example, = read_table(path)
    assert example.text == long_text and len(example.words) == 40_000


def test_a_carriage_return_inside_a_tsv_cell_is_named(tmp_path):
    path = write(tmp_path, "text\tlabel\nok\tpos\nbro\rken\tneg\n", "data.tsv")
    with pytest.raises(DataFormatError, match=rf"^{path}:3: not a valid TSV row"):
        read_table(path)


@pytest.mark.parametrize("name", ["data.tsv", "data.csv", "data.txt"])
def test_old_mac_line_ends_are_named(tmp_path, name):
    """Lines ended by a carriage return alone would make the file one line (one word with twelve
    columns, one text)."""
    text = {"data.tsv": "text\tlabel\rok\tpos\r", "data.csv": "text,label\rok,pos\r",
            "data.txt": "Peter B-PER\rlives O\rin O\rParis B-LOC\r"}[name]
    path = write(tmp_path, text, name)
    with pytest.raises(DataFormatError, match=rf"^{path}:1: lines end with a carriage return alone \(old Mac line "
                                              r"ends\), which would make the file one line: convert them to \\n$"):
        read_table(path) if name != "data.txt" else read_conll(path)


def test_an_unbalanced_csv_quote_is_named_not_run_on_over_the_next_rows(tmp_path):
    path = write(tmp_path, 'text,label\n"I love it,pos\nit is bad,neg\nmeh "ok",pos\nfine day,neg\n', "data.csv")
    with pytest.raises(DataFormatError, match=rf"^{path}:2: not a valid CSV row \(',' expected after '\"'; the row runs "
                                              r"on to line 4\)$"):
        read_table(path)
    path = write(tmp_path, 'text,label\nfine,pos\n"never closed,neg\nok,pos\n', "open.csv")
    with pytest.raises(DataFormatError, match=rf"^{path}:3: not a valid CSV row \(unexpected end of data; the row runs "
                                              r"on to line 4\)$"):
        read_table(path)


def test_a_bare_docstart_line_sets_neither_separator_nor_columns(tmp_path):
    for first in ("-DOCSTART-", "-DOCSTART- -X- -X- O"):
        path = write(tmp_path, f"{first}\n\nPeter\tB-PER\nNew York\tB-LOC\n")
        sentence, = read_conll(path)
        assert sentence.words == ["Peter", "New York"] and sentence.tags == ["B-PER", "B-LOC"]
        rewrite_tokens(path, tmp_path / "out.txt", ["PETER", "NY"])
        assert (tmp_path / "out.txt").read_text() == f"{first}\n\nPETER\tB-PER\nNY\tB-LOC\n"


@pytest.mark.parametrize("ragged", [False, True])
def test_a_no_break_space_inside_a_word_does_not_split_its_columns(tmp_path, ragged):
    path = write(tmp_path, "10\u00a0000 O\nfans O\n\nNew\u202fYork B-LOC\n")
    assert [s.words for s in read_conll(path, ragged=ragged)] == [["10\u00a0000", "fans"], ["New\u202fYork"]]


def test_a_byte_order_mark_starting_a_later_line_is_skipped(tmp_path):
    """Files joined with cat keep the second one's mark at the start of its first line."""
    path = write(tmp_path, "\ufeff-DOCSTART- O\n\nPeter B-PER\n\n\ufeff-DOCSTART- O\n\nAnna B-PER\n")
    assert [s.words for s in read_conll(path)] == [["Peter"], ["Anna"]]


def test_nul_characters_in_wide_text_are_named(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_bytes("a\tO\na\0b\tO\n".encode("utf-16"))
    with pytest.raises(DataFormatError, match=rf"^{path}:2: NUL characters: not text$"):
        read_conll(path)


def test_perturb_copies_files_without_tags(tmp_path, capsys):
    """perturb rewrites words and keeps every other column: it needs no tag column, nor UPOS."""
    words = write(tmp_path, "Peter\nlives\n\nAnna\n", "words.txt")
    main(["perturb", "--data", str(words), "--split", "train", "--attack", "lower", "--output", str(tmp_path / "w.txt")])
    assert (tmp_path / "w.txt").read_text() == "peter\nlives\n\nanna\n"
    conllu = write(tmp_path, "# text = Peter sings\n1\tPeter\t_\t_\t_\t_\t_\t_\t_\t_\n"
                             "2\tsings\t_\t_\t_\t_\t_\t_\t_\t_\n", "noupos.conllu")
    main(["perturb", "--data", str(conllu), "--split", "train", "--attack", "lower", "--output", str(tmp_path / "n.conllu")])
    assert (tmp_path / "n.conllu").read_text().splitlines()[1:3] == ["1\tpeter\t_\t_\t_\t_\t_\t_\t_\t_",
                                                                    "2\tsings\t_\t_\t_\t_\t_\t_\t_\t_"]


@pytest.mark.parametrize("row, message", [
    ({"text": 5, "label": "pos"}, '"text" must be a string, got int'),
    ({"text": ["a", "b"], "label": "pos"}, '"text" must be a string, got list'),
    ({"text": "fine", "label": ["pos"]}, '"label" must be a string, a number or true/false, got list'),
    ({"text": "fine", "label": {"name": "pos"}}, '"label" must be a string, a number or true/false, got dict'),
])
def test_json_values_of_the_wrong_kind_are_named(tmp_path, row, message):
    path = write(tmp_path, json.dumps({"text": "good", "label": "pos"}) + "\n" + json.dumps(row) + "\n", "data.jsonl")
    with pytest.raises(DataFormatError, match=rf"^{path}:2: {message}$"):
        read_table(path)


def test_a_number_label_is_read_as_its_digits(tmp_path):
    path = write(tmp_path, '{"text": "good", "label": 1}\n', "data.jsonl")
    assert read_table(path)[0].label == "1"
    path = write(tmp_path, '{"text": "good", "label": true}\n', "data.jsonl")
    assert read_table(path)[0].label == "True"  # as before the check existed: models trained on it keep their labels


def test_a_tsv_cell_quoted_whole_by_a_csv_writer_is_unquoted(tmp_path):
    path = write(tmp_path, 'text\tlabel\n"He said ""hi"""\tpos\n"quoted" rest\tneg\n', "data.tsv")
    assert [t.text for t in read_table(path)] == ['He said "hi"', '"quoted" rest']


@pytest.mark.parametrize("line", [r'{"text": "go\ud800od", "label": "a"}', r'{"text": "good", "label": "\udc00"}'])
def test_a_lone_surrogate_is_refused_at_read_time(tmp_path, line):
    path = write(tmp_path, '{"text": "\\ud83d\\ude00 fine", "label": "a"}\n' + line + "\n", "data.jsonl")
    with pytest.raises(DataFormatError, match=rf"^{path}:2: not valid Unicode text \(a lone surrogate\)$"):
        read_table(path)


@pytest.mark.parametrize("name, text", [
    ("data.tsv", "text\tlabel\ngood day\tpos\n"),
    ("data.csv", "text,label\ngood day,pos\n"),
    ("data.jsonl", '{"text": "good day", "label": "pos"}\n'),
    ("train_text.txt", "good day\n"),
])
def test_perturb_refuses_classification_data(tmp_path, name, text):
    path = write(tmp_path, text, name)
    output = tmp_path / "noisy.txt"
    with pytest.raises(SystemExit, match=r"^entangle perturb: error: .*: classification data; perturb writes CoNLL and "
                                         r"CoNLL-U files only$"):
        main(["perturb", "--data", str(path), "--split", "train", "--output", str(output)])
    assert not output.exists()


@pytest.mark.parametrize("name, table", [("test.tsv", "text\tlabel\ngood day\tpos\n"),
                                         ("test.csv", "text,label\ngood day,pos\n")])
def test_perturb_refuses_a_table_beside_tagged_splits(tmp_path, name, table):
    write(tmp_path, "Hello O\nworld O\n\n", "train.txt")
    write(tmp_path, table, name)
    output = tmp_path / "noisy.txt"
    with pytest.raises(SystemExit, match=rf"^entangle perturb: error: .*{name}: classification data; "):
        main(["perturb", "--data", str(tmp_path), "--split", "test", "--output", str(output)])
    assert not output.exists()


def test_perturb_refuses_data_labelled_per_character(tmp_path):
    with pytest.raises(SystemExit, match=r"^entangle perturb: error: turkish-german-sagt: labels per character; a noisy "
                                         r"copy changes characters"):
        main(["perturb", "--data", "turkish-german-sagt", "--data-dir", str(tmp_path), "--output", str(tmp_path / "x")])


def test_perturb_names_a_missing_split(tmp_path):
    write(tmp_path, "Hello O\nworld O\n\n", "train.txt")
    with pytest.raises(SystemExit, match=r"^entangle perturb: error: .* has no dev split \(it has train\)$"):
        main(["perturb", "--data", str(tmp_path), "--split", "dev", "--output", str(tmp_path / "noisy.txt")])


def test_perturb_refuses_standard_output(tmp_path, monkeypatch):
    """``-`` was a file of that name: predict's ``--output -`` is standard output, a copy is not."""
    write(tmp_path, "Hello O\nworld O\n\n", "test.txt")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match=r"^entangle perturb: error: perturb writes a copy of the input file: give --output FILE$"):
        main(["perturb", "--data", str(tmp_path), "--output", "-"])
    assert not (tmp_path / "-").exists()


def test_an_empty_tag_is_named(tmp_path):
    path = tmp_path / "trailing.txt"
    path.write_text("Rome\tNOUN\t\nis\tAUX\t\n")
    with pytest.raises(DataFormatError, match=r"trailing.txt:1: empty tag in column -1 \(a tab at the end of the line\?\)"):
        read_conll(path)


def test_json_lines_read_for_a_word_task_are_named_as_texts(tmp_path):
    """Read as columns, each JSON line was one word tagged with itself: "the token column 0 and the
    tag column -1 are the same column", which sent the user to the columns."""
    (tmp_path / "test.jsonl").write_text('{"text": "so good", "label": "pos"}\n')
    with pytest.raises(UsageError, match=r"test.jsonl: JSON lines of texts \(classification data\), not ner data"):
        load_corpus(str(tmp_path / "test.jsonl"), task="ner", splits=("test",))


def test_the_text_and_the_label_are_two_columns(tmp_path):
    path = tmp_path / "data.tsv"
    path.write_text("text\tlabel\ngreat\tpos\n")
    with pytest.raises(UsageError, match="the text and the label are both the column 'text'"):
        read_table(path, text_field="text", label_field="text")


def test_perturb_without_data_says_so(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["perturb", "--output", str(tmp_path / "noisy.txt")])
    assert exit_info.value.code == "entangle perturb: error: give --data: the dataset (or file) to perturb"


CONLLU_ROW = "{id}\t{form}\t_\t{upos}\t{xpos}\t_\t0\troot\t_\t_\n"


def conllu(tmp_path, rows: list[tuple[str, str, str]], name="data.conllu"):
    return write(tmp_path, "".join(CONLLU_ROW.format(id=i, form=f, upos=u, xpos=x)
                                   for i, (f, u, x) in enumerate(rows, 1)) + "\n", name)


def test_conllu_forms_and_tags_lose_their_surrounding_spaces(tmp_path):
    """'NOUN ' beside 'NOUN' was a label of its own, as in a tab-separated CoNLL file before."""
    path = conllu(tmp_path, [(" dog", "NOUN ", "NN"), ("runs", "VERB", "VBZ")])
    assert [(s.words, s.tags) for s in load_corpus(str(path), splits=("train",)).train] == \
        [(["dog", "runs"], ["NOUN", "VERB"])]


def test_entity_tags_in_a_conllu_column_are_checked_and_repaired_as_iob2(tmp_path):
    """Read for NER, a CoNLL-U file's tags skipped the IOB2 check: an entity starting with I- was
    dropped by seqeval, and 'S-PER' passed for a label."""
    path = conllu(tmp_path, [("Ann", "PROPN", "I-PER"), ("sings", "VERB", "O")])
    with pytest.warns(UserWarning, match=r"repaired 1 I- tag\(s\) .* to B- \(lines 1\)"):
        corpus = load_corpus(str(path), task="ner", conllu_tag="xpos", splits=("train",))
    assert corpus.train[0].tags == ["B-PER", "O"]
    path = conllu(tmp_path, [("Ann", "PROPN", "S-PER")])
    with pytest.raises(DataFormatError, match=rf"^{path}:1: 'S-PER' is not a valid IOB2 tag"):
        load_corpus(str(path), task="ner", conllu_tag="xpos", splits=("train",))


def test_conllu_columns_are_not_chosen_by_the_column_options(tmp_path):
    path = conllu(tmp_path, [("dog", "NOUN", "NN")])
    with pytest.raises(UsageError, match="a CoNLL-U file's words are its FORM column .* not --token-column/--tag-column"):
        load_corpus(str(path), task="tagging", tag_column=4, splits=("train",))


def test_a_conllu_word_id_of_thousands_of_digits_is_named(tmp_path):
    path = write(tmp_path, CONLLU_ROW.format(id="1" * 5000, form="dog", upos="NOUN", xpos="NN"), "data.conllu")
    with pytest.raises(DataFormatError, match=rf"^{path}:1: word ID '1+' out of sequence \(expected 1\)"):
        load_corpus(str(path), task="tagging", splits=("train",))


@pytest.mark.parametrize("line, message", [
    ("[" * 100_000, r"not valid JSON \(nested too deeply\)"),
    ('{"text": "a", "label": ' + "1" * 5000 + "}", r"not valid JSON \(.*digits.*; one object per line\)"),
    ('{"text": "a", "label": NaN}', r"not valid JSON \(NaN is not a label or a text; one object per line\)"),
])
def test_json_lines_python_cannot_hold_are_named_with_their_line(tmp_path, line, message):
    path = write(tmp_path, '{"text": "good", "label": "pos"}\n' + line + "\n", "data.jsonl")
    with pytest.raises(DataFormatError, match=rf"^{path}:2: {message}"):
        read_table(path)


def test_a_whole_number_label_is_one_class_however_written(tmp_path):
    path = write(tmp_path, '{"text": "good", "label": 1}\n{"text": "bad", "label": 1.0}\n', "data.jsonl")
    assert [t.label for t in read_table(path)] == ["1", "1"]


def test_a_json_file_of_classification_data_is_read_as_json_lines(tmp_path):
    """A .json file was taken for classification data, then parsed as CSV: "no column 'text'"."""
    path = write(tmp_path, '{"text": "hello, world", "label": "pos"}\n{"text": "bye", "label": "neg"}\n', "train.json")
    corpus = load_corpus(str(path), splits=("train",))
    assert corpus.task == "classification" and [t.label for t in corpus.train] == ["pos", "neg"]
    write(tmp_path, '[{"text": "hello", "label": "pos"}]\n', "list.json")
    with pytest.raises(DataFormatError, match=r"list.json:1: expected an object with 'text' and 'label'"):
        read_table(tmp_path / "list.json")


def test_conll03s_own_file_names_are_its_splits(tmp_path):
    for name in ("eng.train", "eng.testa", "eng.testb"):
        write(tmp_path, "EU\tB-ORG\n", name)
    corpus = load_corpus(str(tmp_path))
    assert {split: path.name for split, path in corpus.files.items()} == \
        {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}


def test_a_test_file_of_another_kind_warns_instead_of_stopping_training(tmp_path):
    write(tmp_path, "EU\tB-ORG\n", "train.txt")
    write(tmp_path, '{"text": "so good", "label": "pos"}\n', "test.jsonl")
    corpus = load_corpus(str(tmp_path), splits=("train",))
    with pytest.warns(UserWarning, match="the test set's labels were not checked: .*test.jsonl: JSON lines of texts"):
        assert corpus.labels == ["O", "B-ORG", "I-ORG"]


def test_a_dataset_split_by_post_id_is_not_mixed_with_split_files(tmp_path):
    """Its one file's split was lost: train was None and train said "no training data"."""
    data = tmp_path / "intraword_cs" / "spanish_wixarika"
    data.mkdir(parents=True)
    (data / "mixed_annotated.txt").write_text("")
    with pytest.raises(UsageError, match="spanish-wixarika has no published split .* give it alone"):
        load_corpus("spanish-wixarika", data_dir=tmp_path, dev=write(tmp_path, "x\tES\n"))
