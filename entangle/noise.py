"""Seeded character-level noise for any labelled dataset: misspelling attacks and social-media noise.

Every transform changes words in place and never their number, so labels stay aligned. A word
is *eligible* when it has at least 4 characters and consists of letters (with their combining
marks) only: numbers, punctuation, URLs, @mentions and emoji are never touched. Characters are
grapheme clusters (Unicode's, UAX #29: a letter with its combining marks, a Hangul syllable's
jamo, an Indic conjunct), so an attack never separates an accent from its letter. ``rate`` is
the share of eligible words, over the whole dataset, that are drawn to be perturbed; which
words, and how, follows from ``seed`` alone. Every CharBERT attack changes a drawn word;
``lower`` and ``upper`` leave one already in that case as it is, so they change fewer words
than ``rate`` says (on WNUT-17's mostly lower-case words, far fewer).

The four attacks of CharBERT (Ma et al. 2020), on internal characters (never the first or last):

- ``drop``: delete one internal character ("noise" -> "nose")
- ``add``: insert a random letter inside the word ("noise" -> "nogise"); an ASCII letter for
  ASCII words, otherwise one of the word's own letters, so the script stays the same
- ``swap``: swap two adjacent, different internal characters ("noise" -> "nosie")
- ``keyboard``: replace an internal character by a neighbour on a QWERTY keyboard ("noise" -> "noiae")
- ``charbert``: one of the four chosen at random for each perturbed word

and the noise of social-media text: ``lower`` (lower-case the word), ``upper`` (all caps) and
``repeat`` (repeat an internal letter two or three more times: "so" + "ooo").

Whole examples lower-cased (:func:`lowercase_sentences`) are case augmentation for training:
text written without capitals lower-cases every word, not a share of them.
"""

from __future__ import annotations

import random
import string
import unicodedata
from dataclasses import replace

import regex

from .data.conll import Sentence

_GRAPHEME = regex.compile(r"\X")
#: Lower cases of one code point where ``str.lower`` gives two.
_LOWER_ONE = {"İ": "i"}

MIN_LENGTH = 4
_QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _keyboard_neighbours() -> dict[str, str]:
    position = {c: (r, i) for r, row in enumerate(_QWERTY_ROWS) for i, c in enumerate(row)}
    neighbours = {}
    for c, (r, i) in position.items():
        near = [d for d, (r2, i2) in position.items() if d != c and abs(r2 - r) <= 1 and abs(i2 - i) <= 1]
        neighbours[c] = "".join(sorted(near))
    return neighbours


KEYBOARD_NEIGHBOURS = _keyboard_neighbours()


def clusters(word: str) -> list[str]:
    """Split a word into grapheme clusters (a letter with its combining marks, and the clusters
    Unicode joins beyond them: Thai's SARA AM with its consonant, decomposed Hangul, Indic
    conjuncts; splitting those at marks alone made invalid text of them)."""
    return _GRAPHEME.findall(word)


def eligible(word: str) -> bool:
    parts = clusters(word)
    return len(parts) >= MIN_LENGTH and all(unicodedata.category(p[0]).startswith("L") for p in parts)


def _drop(parts: list[str], rng: random.Random) -> list[str] | None:
    i = rng.randrange(1, len(parts) - 1)
    return parts[:i] + parts[i + 1 :]


def _add(parts: list[str], rng: random.Random) -> list[str] | None:
    word = "".join(parts)
    pool = string.ascii_lowercase if word.isascii() else [p for p in parts]
    i = rng.randrange(1, len(parts))  # between two characters, never before the first or after the last
    return parts[:i] + [rng.choice(pool)] + parts[i:]


def _swap(parts: list[str], rng: random.Random) -> list[str] | None:
    choices = [i for i in range(1, len(parts) - 2) if parts[i] != parts[i + 1]]
    if not choices:
        return None
    i = rng.choice(choices)
    return parts[:i] + [parts[i + 1], parts[i]] + parts[i + 2 :]


def _keyboard(parts: list[str], rng: random.Random) -> list[str] | None:
    choices = [i for i in range(1, len(parts) - 1) if parts[i].lower() in KEYBOARD_NEIGHBOURS]
    if not choices:
        return None
    i = rng.choice(choices)
    new = rng.choice(KEYBOARD_NEIGHBOURS[parts[i].lower()])
    return parts[:i] + [new.upper() if parts[i].isupper() else new] + parts[i + 1 :]


def _lower(parts: list[str], rng: random.Random) -> list[str] | None:
    return list("".join(parts).lower())


def _upper(parts: list[str], rng: random.Random) -> list[str] | None:
    return list("".join(parts).upper())


def _repeat(parts: list[str], rng: random.Random) -> list[str] | None:
    i = rng.randrange(1, len(parts) - 1)
    return parts[: i + 1] + [parts[i]] * rng.randint(2, 3) + parts[i + 1 :]


CHARBERT_ATTACKS = {"drop": _drop, "add": _add, "swap": _swap, "keyboard": _keyboard}
ATTACKS = {**CHARBERT_ATTACKS, "lower": _lower, "upper": _upper, "repeat": _repeat}
ATTACK_NAMES = ("charbert", *ATTACKS)


def perturb_word(word: str, attack: str, rng: random.Random) -> str:
    """One perturbation of an eligible word. ``charbert`` draws one of its four attacks; an attack
    that cannot change this word (``swap`` on "aaaa") falls back to another of the four."""
    parts = clusters(word)
    if attack == "charbert":
        order = rng.sample(list(CHARBERT_ATTACKS), len(CHARBERT_ATTACKS))
    else:
        order = [attack] + ([n for n in CHARBERT_ATTACKS if n != attack] if attack in CHARBERT_ATTACKS else [])
    for name in order:
        changed = ATTACKS[name](parts, rng)
        if changed is not None:
            return "".join(changed)
    return word


def perturb_words(words: list[str], attack: str, rate: float, seed: int) -> list[str]:
    """Perturb ``rate`` of the eligible words of a flat word list (the whole dataset, in order)."""
    if attack not in ATTACK_NAMES:
        raise ValueError(f"unknown attack {attack!r}; choose from {', '.join(ATTACK_NAMES)}")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate}")
    rng = random.Random(seed)
    candidates = [i for i, word in enumerate(words) if eligible(word)]
    chosen = sorted(rng.sample(candidates, round(rate * len(candidates))))
    out = list(words)
    for i in chosen:
        out[i] = perturb_word(words[i], attack, rng)
    return out


def perturb_texts(texts: list[list[str]], attacks: str | tuple[str, ...], rate: float, seed: int) -> list[list[str]]:
    """A perturbed copy of texts given as their words: each attack in turn on ``rate`` of the
    eligible words of all texts (attack ``k`` drawn with ``seed + k``); every text keeps its number
    of words."""
    flat = [w for text in texts for w in text]
    for k, attack in enumerate((attacks,) if isinstance(attacks, str) else attacks):
        flat = perturb_words(flat, attack, rate, seed + k)
    out, position = [], 0
    for text in texts:
        out.append(flat[position : position + len(text)])
        position += len(text)
    return out


def perturb_sentences(sentences: list[Sentence], attacks: str | tuple[str, ...], rate: float, seed: int
                      ) -> list[Sentence]:
    """A perturbed copy of a dataset (:func:`perturb_texts`): same sentences, same number of words,
    same tags (any example with a ``words`` field: ``Sentence``, ``LabelledText``)."""
    noisy = perturb_texts([s.words for s in sentences], attacks, rate, seed)
    return [replace(sentence, words=words) for sentence, words in zip(sentences, noisy)]


def lower_case(word: str) -> str:
    """``word`` lower-cased code point by code point, so that per-character labels stay aligned:
    "İ", whose lower case is two ("i̇"), becomes the Turkish "i" (it was left a capital), any
    other such code point stays as it is, and a capital sigma that ends a word is "ς" as in ``str.lower``."""
    def final_sigma(i: int) -> bool:
        return i > 0 and word[i - 1].isalpha() and (i + 1 == len(word) or not word[i + 1].isalpha())

    return "".join("ς" if char == "Σ" and final_sigma(i) else _LOWER_ONE.get(char)
                   or (low if len(low := char.lower()) == 1 else char) for i, char in enumerate(word))


def lowercase_sentences(sentences: list[Sentence], share: float, seed: int) -> list[Sentence]:
    """A copy of a dataset with ``share`` of its examples lower-cased whole (which ones follows from
    ``seed``); the rest, labels and lengths unchanged (any example with a ``words`` field). Case
    augmentation: Mayhew et al. (2019) found training on cased and lower-cased copies together the
    best way to tag text both with and without capitals."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share}")
    rng = random.Random(f"lowercase {seed}")  # apart from the attacks' draws of the same seed
    chosen = set(rng.sample(range(len(sentences)), round(share * len(sentences))))
    return [replace(s, words=[lower_case(w) for w in s.words]) if i in chosen else s for i, s in enumerate(sentences)]
