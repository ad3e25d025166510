"""CoNLL-U: syntactic words and their tags, multi-word tokens and empty nodes, errors, writing back."""

import pytest
from conftest import shared_data

from entangle.bench import noisy_test_paths
from entangle.cli import main
from entangle.data.conll import DataFormatError
from entangle.data.conllu import read_conllu, write_conllu
from entangle.data.corpus import load_corpus

UD = """# sent_id = 1
# text = Vámonos al mar
1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_
1\tVamos\tir\tVERB\tV\t_\t0\troot\t_\t_
2\tnos\tnosotros\tPRON\tP\t_\t1\tobj\t_\t_
3-4\tal\t_\t_\t_\t_\t_\t_\t_\t_
3\ta\ta\tADP\tS\t_\t5\tcase\t_\t_
4\tel\tel\tDET\tD\t_\t5\tdet\t_\t_
4.1\tva\tir\tVERB\t_\t_\t_\t_\t0:root\t_
5\tmar\tmar\tNOUN\tN\t_\t1\tobl\t_\t_

# sent_id = 2
1\tlol\tlol\tINTJ\t_\t_\t0\troot\t_\t_

"""


def test_syntactic_words_and_their_tags(tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(UD)
    first, second = read_conllu(path)
    assert first.words == ["Vamos", "nos", "a", "el", "mar"]
    assert first.tags == ["VERB", "PRON", "ADP", "DET", "NOUN"]
    assert first.comments == ["# sent_id = 1", "# text = Vámonos al mar"] and first.source.endswith("a.conllu:1")
    with pytest.raises(DataFormatError, match=r"a.conllu:13: word 1 has no XPOS"):
        read_conllu(path, "xpos")
    path.write_text(UD.split("\n\n")[0] + "\n")
    assert read_conllu(path, "xpos")[0].tags == ["V", "P", "S", "D", "N"]
    assert second.words == ["lol"]


@pytest.mark.parametrize("line,message", [
    ("1\tVamos\tir\tVERB", r":2: expected 10 tab-separated columns, found 4"),
    ("2\tVamos\tir\tVERB\t_\t_\t0\troot\t_\t_", r":2: word ID '2' out of sequence \(expected 1\)"),
    ("\u00b2\tVamos\tir\tVERB\t_\t_\t0\troot\t_\t_", r":2: word ID '\u00b2' out of sequence \(expected 1\)"),
    ("\u0661\tVamos\tir\tVERB\t_\t_\t0\troot\t_\t_", r":2: word ID '\u0661' out of sequence \(expected 1\)"),
    ("1\t\tir\tVERB\t_\t_\t0\troot\t_\t_", r":2: empty word form"),
    ("1-3\tVamos\t_\t_\t_\t_\t_\t_\t_\t_\n1\tVamos\tir\tVERB\t_\t_\t0\troot\t_\t_", r":3: multi-word token range ends at 3"),
])
def test_malformed_lines_are_named(tmp_path, line, message):
    path = tmp_path / "bad.conllu"
    path.write_text("# text = x\n" + line + "\n")
    with pytest.raises(DataFormatError, match="bad.conllu" + message):
        read_conllu(path)


def test_writing_back_changes_only_the_chosen_column(tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(UD)
    write_conllu(path, tmp_path / "out.conllu", [["X"] * 5, ["NOUN"]], "upos")
    written = (tmp_path / "out.conllu").read_text()
    expected = UD
    for tag in ("VERB\tV", "PRON\tP", "ADP\tS", "DET\tD", "NOUN\tN"):
        expected = expected.replace(f"\t{tag}\t", f"\tX\t{tag.split(chr(9))[1]}\t", 1)
    expected = expected.replace("lol\tlol\tINTJ", "lol\tlol\tNOUN")
    assert written == expected  # comments, ranges, the empty node and the other columns are kept
    with pytest.raises(ValueError, match="do not match"):
        write_conllu(path, tmp_path / "out.conllu", [["X"] * 4, ["NOUN"]])
    write_conllu(tmp_path / "out.conllu", tmp_path / "out.conllu", [["ADV"] * 5, ["NOUN"]], "upos")
    assert [s.tags for s in read_conllu(tmp_path / "out.conllu")] == [["ADV"] * 5, ["NOUN"]]  # in place


def test_the_copy_is_written_as_the_format_asks_whatever_the_input(tmp_path):
    """UTF-8 without a byte-order mark, LF line ends, one blank line after each sentence."""
    path = tmp_path / "a.conllu"
    path.write_bytes(b"\xef\xbb\xbf" + UD.replace("\n\n", "\n\n\n").replace("\n", "\r\n").encode())
    write_conllu(path, tmp_path / "out.conllu", [s.tags for s in read_conllu(path)], "upos")
    assert (tmp_path / "out.conllu").read_bytes() == UD.encode()


def test_a_directory_of_ud_files_is_a_tagging_corpus(tmp_path):
    for split in ("train", "dev", "test"):
        (tmp_path / f"xx_tiny-ud-{split}.conllu").write_text(UD)
    corpus = load_corpus(tmp_path)
    assert corpus.task == "tagging" and corpus.labels == ["ADP", "DET", "INTJ", "NOUN", "PRON", "VERB"]
    main(["perturb", "--data", str(tmp_path), "--attack", "upper", "--rate", "1", "--output", str(tmp_path / "n.conllu")])
    noisy = read_conllu(tmp_path / "n.conllu")
    assert noisy[0].words == ["VAMOS", "nos", "a", "el", "mar"] and noisy[1].words == ["lol"]  # < 4 letters: kept
    assert noisy[0].tags == ["VERB", "PRON", "ADP", "DET", "NOUN"] and "1-2\tVámonos" in (tmp_path / "n.conllu").read_text()
    # The text of a sentence whose words changed is theirs (a multi-word token keeps its surface form).
    write_conllu(tmp_path / "n.conllu", tmp_path / "m.conllu", [["Vamos", "nos", "a", "el", "MAR"], ["lol"]], "form")
    assert (tmp_path / "m.conllu").read_text() == (tmp_path / "n.conllu").read_text().replace(
        "# text = Vámonos al mar", "# text = Vámonos al MAR").replace("5\tmar", "5\tMAR").replace("VAMOS", "Vamos")
    (tmp_path / "glued.conllu").write_text("# text = lol!\n1\tlol\tlol\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
                                           "2\t!\t!\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n")
    write_conllu(tmp_path / "glued.conllu", tmp_path / "m.conllu", [["LOL", "!"]], "form")
    assert "# text = LOL!\n" in (tmp_path / "m.conllu").read_text()
    with pytest.raises(SystemExit, match=r"n.txt: the copy keeps the format of xx_tiny-ud-test.conllu.*name it with one"):
        main(["perturb", "--data", str(tmp_path), "--attack", "upper", "--output", str(tmp_path / "n.txt")])
    assert not (tmp_path / "n.txt").exists()  # else read back as CoNLL columns, its comment lines as words
    assert noisy_test_paths(tmp_path / "run", "lower@1.0", str(tmp_path))[0] == tmp_path / "run" / "test_lower_1.0.conllu"


def test_tweebank_reads_whole():
    shared_data("tweebank_v2")
    corpus = load_corpus("tweebank")
    assert (len(corpus.train), len(corpus.dev), len(corpus.test)) == (1639, 710, 1201)
    assert len(corpus.labels) == 17 and corpus.task == "tagging"
    assert all(s.comments[0].startswith("# tweet_id") for s in corpus.test)
