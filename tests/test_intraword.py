"""Intra-word code-switching: the Spanish–Wixarika and SAGT readers, their repairs and skips, the
seeded split by post id, character accuracy, and the real files."""

import math
import random
import warnings

import pytest
from conftest import shared_data

from entangle.data import datasets
from entangle.data.conll import DataFormatError
from entangle.data.corpus import load_corpus
from entangle.data.intraword import (
    SAGT_LABELS,
    WIXARIKA_LABELS,
    CharTaggedSentence,
    read_sagt,
    read_spanish_wixarika,
    split_by_id,
)
from entangle.metrics import char_accuracy
from entangle.options import UsageError

# One line per repair or skip kind; the comment names it (line numbers matter: the report cites them).
WIXARIKA_LINES = [
    "0\tKe|pai\tWIX",
    "0\tne|amiga\tMIXED",
    "- ne WIX",
    "-\tamiga\tES",
    "0\t!\tOTHER\t",  # 5 trailing-field
    "1\tJosue\t\tNE.ES",  # 6 tag-in-next-field
    "1\tuka\tWIX\t?",  # 7 unsure-mark
    "1\tTepic\tWIX.NE",  # 8 tag-alias
    "2\tSaludo|ri\tWIX",  # 9 morphs-on-unmixed-word
    "- Saludo ES",
    "- ri WIX",
    "2\ta|niña\tMIXED",  # 12 bar-in-morph
    "-\ta\tWIX",
    "-\tniñ|a ES",
    "2\tneamiku\tMIXED",  # 15 segmentation-from-morphs
    "- ne WIX",
    "- amiku ES.SLANG",
    "3\tNe|plimo\tMIXED",  # 18 morph-case
    "- ne WIX",
    "- plimo ES.SLANG",
    "3\tne|kwe|ramate\tMIXED",  # 21 morph-spelling
    "- ne WIX",
    "- kwe WIX",
    "- remate ES",
    "3\tka|yu\tMIXED",  # 25 mixed-one-language
    "- ka WIX",
    "- yu WIX",
    "0\t....\tOTHER",  # 28 post-reappears (dropped; post 3 goes on)
    "3\t.\tOTHER",
    "4\tHely\t?",  # 30 unknown-language
    "5\tne|amiga\tMIXED",  # 31 mixed-without-morphs
    "6\tta|cuñado\tMIXED",
    "- ta WIX",
    "- cuñado",  # 34 morph-without-language
    "7\tukari|zz\tMIXED",  # 35 morph-mismatch
    "- uki WIX",
    "- ri WIX",
    "- zz ES.SLANG",
    "8\tde\t",  # 39 missing-tag
    "9\tok\tEN",
    "10\tne|x\tMIXED",
    "- ne WIX",
    "- x ?",  # 43 unknown-language (a morph)
]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def read_quietly(reader, path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = reader(path)
    assert len(caught) <= 1, "one warning per file at most"
    return result, caught


def test_wixarika_labels_each_character_and_repairs_what_is_unambiguous(tmp_path):
    path = write(tmp_path, "mixed_annotated.txt", "\n".join(WIXARIKA_LINES) + "\n")
    (sentences, report), caught = read_quietly(read_spanish_wixarika, path)
    assert [s.id for s in sentences] == ["0", "1", "2", "3", "9"]
    first, second, third, fourth, last = sentences
    assert first.words == ["Kepai", "neamiga", "!"] and first.source == f"{path}:1"
    assert first.char_tags == [["WIX"] * 5, ["WIX"] * 2 + ["ES"] * 5, ["OTHER"]]
    assert first.mixed == [False, True, False]
    assert second.char_tags == [["NE.ES"] * 5, ["WIX"] * 3, ["NE.WIX"] * 5]
    assert third.words == ["Saludori", "aniña", "neamiku"] and third.mixed == [True, True, True]
    assert third.char_tags == [["ES"] * 6 + ["WIX"] * 2, ["WIX"] + ["ES"] * 4, ["WIX"] * 2 + ["ES.SLANG"] * 5]
    assert fourth.words == ["Neplimo", "nekweramate", "kayu", "."] and fourth.source == f"{path}:18"
    assert fourth.char_tags == [["WIX"] * 2 + ["ES.SLANG"] * 5, ["WIX"] * 5 + ["ES"] * 6, ["WIX"] * 4, ["OTHER"]]
    assert fourth.mixed == [True, True, False, False]
    assert last.char_tags == [["EN", "EN"]]
    assert dict(report.counts) == {
        "trailing-field": 1, "tag-in-next-field": 1, "unsure-mark": 1, "tag-alias": 1,
        "morphs-on-unmixed-word": 1, "bar-in-morph": 1, "segmentation-from-morphs": 1, "morph-case": 1,
        "morph-spelling": 1, "mixed-one-language": 1, "post-reappears": 1, "unknown-language": 2,
        "mixed-without-morphs": 1, "morph-without-language": 1, "morph-mismatch": 1, "missing-tag": 1,
    }
    assert report.lines["unknown-language"] == [30, 43] and report.lines["post-reappears"] == [28]
    assert report.examples("morph-mismatch") == [f"{path}:35"]
    assert report.skipped == 7
    (warning,) = caught
    assert str(warning.message).startswith(f"{path}: 7 skipped") and "(line 34)" in str(warning.message)


def test_repairs_in_a_skipped_post_are_not_counted(tmp_path):
    path = write(tmp_path, "a.txt", "0\tuka\tWIX\t\n0\tHely\t?\n")
    (sentences, report), _ = read_quietly(read_spanish_wixarika, path)
    assert sentences == [] and dict(report.counts) == {"unknown-language": 1}


def test_a_clean_file_gives_no_warning(tmp_path):
    path = write(tmp_path, "a.txt", "0\tuka\tWIX\n1\thola\tES\n")
    (sentences, report), caught = read_quietly(read_spanish_wixarika, path)
    assert len(sentences) == 2 and not report.counts and not caught


@pytest.mark.parametrize("text,message", [
    ("x\tword\tES\n", r":1: expected 'POST<TAB>WORD<TAB>TAG'"),
    ("0\tword\n", r":1: expected 'POST<TAB>WORD<TAB>TAG'"),
    ("- ne WIX\n", r":1: morph line before any word"),
    ("0\tword\tES\n0\tword\tESP\n", r":2: unknown tag 'ESP'"),
    ("0\tne|x\tMIXED\n- ne MIXED\n", r":2: unknown tag 'MIXED'"),
    ("0\tne|x\tMIXED\n- ne WIX extra\n", r":2: expected a morph line"),
    ("0\t|\tOTHER\n", r":1: empty word"),
    ("0\tword\tES\tWIX\n", r":1: expected one tag after the word"),
])
def test_wixarika_malformed_lines_are_named(tmp_path, text, message):
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(DataFormatError, match="bad.txt" + message):
        read_spanish_wixarika(path)


def test_wixarika_invalid_utf8_is_named(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"0\tok\tES\n1\t\xff\tES\n")
    with pytest.raises(DataFormatError, match=r"bad.txt:2: not valid UTF-8"):
        read_spanish_wixarika(path)


SAGT = """# sent_id = s1
# text = Prüfungum vardı Berlin'e!
1\tPrüfungum\tPrüfung\tNOUN\t_\t_\t0\troot\t_\tCSID=MIXED|CSPoint=Prüfung§um|Lang=qtd
2-3\tvardı\t_\t_\t_\t_\t_\t_\t_\tCSID=TR|Lang=tr
2\tvar\tvar\tADJ\t_\t_\t1\tdep\t_\tCSID=TR|Lang=tr
3\tdı\ti\tAUX\t_\t_\t2\tcop\t_\tCSID=TR|Lang=tr
4\tBerlin'e\tBerlin\tPROPN\t_\t_\t1\tobl\t_\tCSID=MIXED|CSPoint=Berlin§'e|Lang=qtd|SpaceAfter=No
5\t!\t!\tPUNCT\t_\t_\t1\tpunct\t_\tCSID=OTHER

# sent_id = s2
1-2\tspannenddi\t_\t_\t_\t_\t_\t_\t_\tCSID=MIXED|CSPoint=spannend§di|Lang=qtd
1\tspannend\tspannend\tADJ\t_\t_\t0\troot\t_\tCSID=DE|CSPoint=spannend§|Lang=de
2\tdi\ti\tAUX\t_\t_\t1\tcop\t_\tCSID=TR|Lang=tr
3\tarıs\tarı\tNOUN\t_\t_\t1\tdep\t_\tCSID=MIXED|CSPoint=arı§s|Lang=qtd
4\tmücevhers\tmücevher\tNOUN\t_\t_\t1\tdep\t_\tCSID=TR|CSPoint=mücevher§s|Lang=tr
5\tlive\tlive\tADJ\t_\t_\t1\tdep\t_\tCSID=LANG3|Lang=en

# sent_id = s3
1\tmrank\tTrank\tNOUN\t_\t_\t0\troot\t_\tCSID=MIXED|Lang=qtd

# sent_id = s4
1\tUnide\tUni\tNOUN\t_\t_\t0\troot\t_\tCSID=MIXED|CSPoint=Uni§da|Lang=qtd

# sent_id = s5
1\tPrüfung\tPrüfung\tNOUN\t_\t_\t0\troot\t_\tCSID=MIXED|CSPoint=Prüfung§|Lang=qtd
"""


def test_sagt_surface_tokens_with_stem_and_suffix_languages(tmp_path):
    path = write(tmp_path, "a.conllu", SAGT)
    (sentences, report), caught = read_quietly(read_sagt, path)
    first, second = sentences
    assert first.id == "s1" and first.source == f"{path}:1" and first.comments[1].startswith("# text")
    assert first.words == ["Prüfungum", "vardı", "Berlin'e", "!"]  # the multi-word token is one word
    assert first.char_tags == [["DE"] * 7 + ["TR"] * 2, ["TR"] * 5, ["DE"] * 6 + ["TR"] * 2, ["OTHER"]]
    assert first.mixed == [True, False, True, False]
    assert second.words == ["spannenddi", "arıs", "mücevhers", "live"]
    assert second.char_tags == [["DE"] * 8 + ["TR"] * 2, ["TR"] * 3 + ["DE"], ["TR"] * 9, ["LANG3"] * 4]
    assert second.mixed == [True, True, False, False]
    assert dict(report.counts) == {"turkish-stem": 1, "cspoint-on-unmixed": 1, "mixed-without-cspoint": 1,
                                   "cspoint-mismatch": 2}
    assert report.lines["cspoint-mismatch"] == [22, 25] and report.lines["mixed-without-cspoint"] == [19]
    assert report.skipped == 3 and len(caught) == 1


@pytest.mark.parametrize("line,message", [
    ("1\tx\tx\tX\t_\t_\t0\troot\t_\tLang=tr", r":2: token has no CSID"),
    ("1\tx\tx\tX\t_\t_\t0\troot\t_\t_", r":2: token has no CSID"),
    ("1\tx\tx\tX\t_\t_\t0\troot\t_\tCSID=FR", r":2: unknown CSID 'FR'"),
    ("1-2\txy\t_\t_\t_\t_\t_\t_\t_\t_\n1\tx\tx\tX\t_\t_\t0\troot\t_\tCSID=TR\n2\ty\ty\tX\t_\t_\t1\tdep\t_\tCSID=TR",
     r":2: token has no CSID"),
    ("2\tx\tx\tX\t_\t_\t0\troot\t_\tCSID=TR", r":2: word ID '2' out of sequence"),
])
def test_sagt_malformed_tokens_are_named(tmp_path, line, message):
    path = write(tmp_path, "bad.conllu", "# sent_id = 1\n" + line + "\n")
    with pytest.raises(DataFormatError, match="bad.conllu" + message):
        read_sagt(path)


def one_word(identifier: str) -> CharTaggedSentence:
    return CharTaggedSentence(["ab"], [["ES", "ES"]], [False], id=identifier)


def test_the_split_is_by_id_seeded_and_independent_of_order():
    sentences = [one_word(str(i)) for i in range(100)]
    split = split_by_id(sentences)
    assert [len(split[s]) for s in ("train", "dev", "test")] == [80, 10, 10]
    shuffled = sentences[:]
    random.Random(1).shuffle(shuffled)
    again = split_by_id(shuffled)
    assert {s: {x.id for x in split[s]} for s in split} == {s: {x.id for x in again[s]} for s in again}
    assert [x.id for x in again["test"]] == [x.id for x in shuffled if x in again["test"]]  # input order kept
    other_seed = split_by_id(sentences, seed=1)
    assert {x.id for x in other_seed["test"]} != {x.id for x in split["test"]}


def test_removing_a_post_moves_at_most_one_other_across_each_cut():
    sentences = [one_word(str(i)) for i in range(100)]
    where = {x.id: name for name, part in split_by_id(sentences).items() for x in part}
    for removed in range(0, 100, 7):
        rest = [s for s in sentences if s.id != str(removed)]
        moved = [x.id for name, part in split_by_id(rest).items() for x in part if where[x.id] != name]
        assert len(moved) <= 2


def test_the_split_needs_unique_ids_and_valid_fractions():
    with pytest.raises(ValueError, match="repeated: 1"):
        split_by_id([one_word("1"), one_word("1")])
    with pytest.raises(ValueError, match="fractions"):
        split_by_id([one_word("1")], fractions=(0.5, 0.1, 0.1))


def test_sentence_needs_one_label_per_character():
    with pytest.raises(ValueError, match="'ab' has 2 characters but 1 labels"):
        CharTaggedSentence(["ab"], [["ES"]], [False], "f.txt:3")


def test_character_accuracy_over_all_words_and_mixed_words():
    gold = [[["ES", "ES"], ["WIX", "WIX", "ES", "ES"]], [["OTHER"]]]
    predicted = [[["ES", "WIX"], ["WIX", "WIX", "ES", "WIX"]], [["OTHER"]]]
    mixed = [[False, True], [False]]
    scores = char_accuracy(gold, predicted, mixed)
    assert scores["char_accuracy"] == pytest.approx(5 / 7)
    assert scores["mixed_char_accuracy"] == pytest.approx(3 / 4)
    assert (scores["chars"], scores["mixed_chars"], scores["mixed_words"]) == (7, 4, 1)
    assert math.isnan(char_accuracy(gold, gold, [[False, False], [False]])["mixed_char_accuracy"])
    with pytest.raises(ValueError, match="sentence 0, word 1: 4 gold and 3 predicted"):
        char_accuracy(gold, [[["ES", "ES"], ["WIX", "WIX", "ES"]], [["OTHER"]]], mixed)
    with pytest.raises(ValueError, match="sentence 1: 1 gold words, 1 predicted, 0 mixed flags"):
        char_accuracy(gold, predicted, [[False, True], []])


# Real files -------------------------------------------------------------------------------------


def counts(sentences):
    """sentences, words, mixed words, characters, characters of mixed words"""
    return (len(sentences), sum(len(s.words) for s in sentences), sum(sum(s.mixed) for s in sentences),
            sum(len(w) for s in sentences for w in s.words),
            sum(len(w) for s in sentences for w, m in zip(s.words, s.mixed) if m))


def load_quietly(name, data_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corpus = load_corpus(name, data_dir=data_dir)
    assert corpus.task == "char-tagging"
    return {split: corpus.split(split) for split in ("train", "dev", "test")}


def test_real_spanish_wixarika():
    path = shared_data("intraword_cs", "spanish_wixarika", "mixed_annotated.txt")
    (sentences, report), caught = read_quietly(read_spanish_wixarika, path)
    assert counts(sentences) == (488, 4401, 76, 19964, 586) and len(caught) == 1
    assert dict(report.counts) == {
        "trailing-field": 29, "unsure-mark": 18, "segmentation-from-morphs": 8, "morph-case": 4,
        "morph-spelling": 4, "morphs-on-unmixed-word": 2, "tag-in-next-field": 2, "bar-in-morph": 1,
        "tag-alias": 1, "post-reappears": 1, "unknown-language": 13, "mixed-without-morphs": 2,
        "morph-without-language": 1, "morph-mismatch": 1,
    }
    assert {tag for s in sentences for tags in s.char_tags for tag in tags} == set(WIXARIKA_LABELS)
    split = load_quietly("spanish-wixarika", path.parents[2])
    assert {name: counts(part) for name, part in split.items()} == {
        "train": (390, 3521, 55, 15993, 432), "dev": (49, 413, 11, 1880, 81), "test": (49, 467, 10, 2091, 73)}
    # the fixed split: these posts are in dev and test for every user
    assert [s.id for s in split["dev"][:5]] == ["2", "9", "15", "16", "32"]
    assert [s.id for s in split["test"][:5]] == ["25", "27", "35", "58", "60"]


def test_intraword_names_are_read_their_own_way_only_for_their_own_task():
    data_dir = shared_data("intraword_cs", "german_turkish_SAGT_substitute").parents[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tagging = load_corpus("turkish-german-sagt", data_dir=data_dir, task="tagging", splits=("dev",))
    assert tagging.task == "tagging" and tagging.dev[0].tags  # its CoNLL-U read as POS tags
    with pytest.raises(UsageError, match="spanish-wixarika is a char-tagging dataset; it cannot be read for tagging"):
        load_corpus("spanish-wixarika", data_dir=data_dir, task="tagging")


def test_real_turkish_german_sagt():
    data_dir = shared_data("intraword_cs", "german_turkish_SAGT_substitute").parents[1]
    split = load_quietly("turkish-german-sagt", data_dir)
    assert {name: counts(part) for name, part in split.items()} == {
        "train": (575, 9944, 105, 44997, 1084), "dev": (801, 12959, 145, 58065, 1612),
        "test": (804, 13954, 181, 63456, 1953)}
    assert {tag for part in split.values() for s in part for tags in s.char_tags for tag in tags} == set(SAGT_LABELS)
    (_, report), _ = read_quietly(read_sagt, data_dir / datasets.DATASETS["turkish-german-sagt"].files["train"])
    assert dict(report.counts) == {"mixed-without-cspoint": 3, "cspoint-on-unmixed": 1, "turkish-stem": 1}


def test_real_files_match_the_pinned_checksums_and_load_as_character_corpora():
    data_dir = shared_data("intraword_cs").parent
    for name in ("spanish-wixarika", "turkish-german-sagt"):
        for relative in datasets.DATASETS[name].files.values():
            assert datasets.sha256(data_dir / relative) == datasets.CHECKSUMS[relative]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            corpus = load_corpus(name, data_dir=data_dir)
        assert corpus.task == "char-tagging"
        assert corpus.labels == sorted({t for s in corpus.train for tags in s.char_tags for t in tags})
