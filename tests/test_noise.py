"""Noise transforms: each attack's behaviour, eligibility, determinism, labels and word counts kept."""

import random
import unicodedata

import pytest

from entangle.data.conll import Sentence, read_conll, rewrite_tokens
from entangle.noise import (
    ATTACK_NAMES,
    KEYBOARD_NEIGHBOURS,
    clusters,
    eligible,
    lowercase_sentences,
    perturb_sentences,
    perturb_word,
    perturb_words,
)


def test_eligibility():
    assert eligible("noise") and eligible("Москва") and eligible("e\u0301cole")
    for word in ("the", "it's", "2024", "http://x.co", "@paulwalk", "👩\u200d👩\u200d👧", "😀😀😀😀", "東京"):
        assert not eligible(word), word


def test_clusters_keep_combining_marks_with_their_letter():
    assert clusters("e\u0301cole") == ["e\u0301", "c", "o", "l", "e"]


@pytest.mark.parametrize("word, parts", [
    ("น้ำแข็ง", ["น้ำ", "แ", "ข็", "ง"]),  # Thai SARA AM (a letter to unicodedata) stays with its consonant
    (unicodedata.normalize("NFD", "대한민국"), [unicodedata.normalize("NFD", c) for c in "대한민국"]),  # jamo
    ("सत्यमेव", ["स", "त्य", "मे", "व"]),  # an Indic conjunct
])
def test_clusters_are_unicodes_grapheme_clusters(word, parts):
    """Split at marks alone, these came apart: a repeated SARA AM, jamo swapped into invalid syllables."""
    assert clusters(word) == parts and eligible(word)
    for attack in ("drop", "add", "swap", "repeat"):
        for seed in range(20):  # whole clusters moved, dropped or repeated: none made of pieces
            assert set(clusters(perturb_word(word, attack, random.Random(seed)))) <= set(parts), attack


@pytest.mark.parametrize("word", ["noise", "Москва", "e\u0301cole", "abcdefgh"])
@pytest.mark.parametrize("seed", range(5))
def test_charbert_attacks_keep_first_and_last_character(word, seed):
    parts = clusters(word)
    for attack in ("drop", "add", "swap", "keyboard"):
        out = perturb_word(word, attack, random.Random(seed))
        out_parts = clusters(out)
        assert out != word
        assert out_parts[0] == parts[0] and out_parts[-1] == parts[-1], (attack, out)
        # combining marks are never separated from their letter
        assert "e\u0301" in out or "e\u0301" not in word or attack == "drop"


def test_each_attack_does_what_it_says():
    rng = random.Random(0)
    assert len(perturb_word("noise", "drop", rng)) == 4
    assert len(perturb_word("noise", "add", rng)) == 6
    swapped = perturb_word("noise", "swap", rng)
    assert sorted(swapped) == sorted("noise") and swapped != "noise"
    typo = perturb_word("noise", "keyboard", rng)
    [(i, new)] = [(i, c) for i, c in enumerate(typo) if c != "noise"[i]]
    assert new in KEYBOARD_NEIGHBOURS["noise"[i]]
    assert perturb_word("Noise", "lower", rng) == "noise" and perturb_word("Noise", "upper", rng) == "NOISE"
    repeated = perturb_word("sooo", "repeat", rng)
    assert len(repeated) in (6, 7) and repeated[0] == "s"


def test_add_keeps_the_script():
    out = perturb_word("Москва", "add", random.Random(1))
    assert all(not c.isascii() for c in out)


@pytest.mark.parametrize("seed", range(5))
def test_swap_falls_back_when_it_cannot_change_the_word(seed):
    # no two different adjacent internal letters: another CharBERT attack is used instead
    assert perturb_word("aaaa", "swap", random.Random(seed)) != "aaaa"


WORDS = "The quick brown foxes jumped over lazy dogs in Москва , 東京 and São Paulo 😀 !".split()


@pytest.mark.parametrize("attack", ATTACK_NAMES)
def test_rate_and_determinism(attack):
    n_eligible = sum(eligible(w) for w in WORDS)
    assert perturb_words(WORDS, attack, 0.0, seed=1) == WORDS
    full = perturb_words(WORDS, attack, 1.0, seed=1)
    assert len(full) == len(WORDS)
    assert full == perturb_words(WORDS, attack, 1.0, seed=1)
    changed = [i for i, (a, b) in enumerate(zip(WORDS, full)) if a != b]
    assert all(eligible(WORDS[i]) for i in changed)
    if attack not in ("lower", "upper"):  # these leave already lower/upper-case words as they are
        assert len(changed) == n_eligible
    half = perturb_words(WORDS, attack, 0.5, seed=1)
    assert sum(a != b for a, b in zip(WORDS, half)) <= round(0.5 * n_eligible)


def test_sentences_keep_tags_and_lengths():
    sentences = [Sentence(["Peter", "visited", "Москва"], ["B-PER", "O", "B-LOC"]), Sentence(["lol"], ["O"])]
    noisy = perturb_sentences(sentences, "charbert", 1.0, seed=3)
    assert [s.tags for s in noisy] == [s.tags for s in sentences]
    assert [len(s.words) for s in noisy] == [3, 1]
    assert noisy[0].words != sentences[0].words and noisy[1].words == ["lol"]


def test_lowercase_sentences_lowers_a_share_of_whole_examples_and_keeps_every_length():
    sentences = [Sentence(["Peter", "visited", f"NYC{i}", "İzmir"], ["B-PER", "O", "B-LOC", "B-LOC"]) for i in range(10)]
    lowered = lowercase_sentences(sentences, 0.3, seed=5)
    changed = [i for i, (a, b) in enumerate(zip(sentences, lowered)) if a.words != b.words]
    assert len(changed) == 3 and all(lowered[i].words[:3] == ["peter", "visited", f"nyc{i}"] for i in changed)
    # "İ" lower-cases to two code points: the Turkish "i" instead, so per-character labels stay aligned
    assert all(len(a) == len(b) for s, t in zip(sentences, lowered) for a, b in zip(s.words, t.words))
    assert [s.tags for s in lowered] == [s.tags for s in sentences]
    assert lowercase_sentences(sentences, 0.3, seed=5) == lowered and lowercase_sentences(sentences, 0.3, seed=6) != lowered
    assert lowercase_sentences(sentences, 0.0, seed=5) == sentences
    assert all(w == w.lower() or w == "izmir" for s in lowercase_sentences(sentences, 1.0, seed=5) for w in s.words)


def test_lower_casing_leaves_no_capital_and_ends_a_greek_word_with_its_final_sigma():
    """"İ" was kept a capital (the very cue case augmentation removes), and a final "Σ" became "σ"."""
    [lowered] = lowercase_sentences([Sentence(["İSTANBUL", "ΟΔΥΣΣΕΥΣ", "ΑΣ.", "Straße"], ["O"] * 4)], 1.0, seed=0)
    assert lowered.words == ["istanbul", "οδυσσευς", "ας.", "straße"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown attack"):
        perturb_words(WORDS, "shout", 0.5, 0)
    with pytest.raises(ValueError, match="rate"):
        perturb_words(WORDS, "drop", 1.5, 0)
    with pytest.raises(ValueError, match="share"):
        lowercase_sentences([], -0.1, 0)


def test_rewrite_keeps_the_format(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("-DOCSTART- -X- -X- O\n\nPeter NNP B-NP B-PER\nvisited VBD B-VP O\n\nLondon NNP B-NP B-LOC\n")
    sentences = read_conll(source)
    words = [w for s in perturb_sentences(sentences, "upper", 1.0, seed=0) for w in s.words]
    rewrite_tokens(source, tmp_path / "out.txt", words)
    assert (tmp_path / "out.txt").read_text() == (
        "-DOCSTART- -X- -X- O\n\nPETER NNP B-NP B-PER\nVISITED VBD B-VP O\n\nLONDON NNP B-NP B-LOC\n"
    )
    rewrite_tokens(source, source, words)  # in place: replaced once written whole
    assert source.read_text() == (tmp_path / "out.txt").read_text()
    before = source.read_text()
    with pytest.raises(ValueError, match="fewer replacement words"):  # the write fails half-way
        rewrite_tokens(source, source, words[:1])
    assert source.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]


def test_rewrite_changes_the_words_alone_byte_order_mark_line_ends_and_alignment_kept(tmp_path):
    """The copy was rebuilt from its columns: aligned columns closed up, CRLF became LF, the
    byte-order mark and a last line without its end were lost."""
    source = tmp_path / "in.txt"
    source.write_bytes(b"\xef\xbb\xbf-DOCSTART- -X- O\r\n\r\nEUROPEAN   NNP  B-NP\r\nHello  x  O\r\n\r\nlast   Y  O")
    rewrite_tokens(source, tmp_path / "out.txt", ["EU", "HI", "LAST"])
    assert (tmp_path / "out.txt").read_bytes() == (
        b"\xef\xbb\xbf-DOCSTART- -X- O\r\n\r\nEU   NNP  B-NP\r\nHI  x  O\r\n\r\nLAST   Y  O")
    source.write_text("x\tHello \tO\ny\tword\tB\n")  # a tab cell keeps its spaces, the token counted from the end
    rewrite_tokens(source, tmp_path / "out.txt", ["HI", "WORD"], token_column=-2)
    assert (tmp_path / "out.txt").read_text() == "x\tHI \tO\ny\tWORD\tB\n"


def test_perturb_copies_a_ragged_file(tmp_path):
    """``--ragged-columns`` (CharBERT's files: lines with their own number of columns) reads and writes."""
    from entangle.cli import main

    source = tmp_path / "ragged.txt"
    source.write_text("Peter B-PER\nvisited VBD O\n\nLondon NNP B-NP B-LOC\n")
    main(["perturb", "--data", str(source), "--split", "train", "--attack", "upper", "--rate", "1", "--ragged-columns",
          "--output", str(tmp_path / "out.txt")])
    assert (tmp_path / "out.txt").read_text() == "PETER B-PER\nVISITED VBD O\n\nLONDON NNP B-NP B-LOC\n"
