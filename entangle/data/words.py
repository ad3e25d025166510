"""Raw text -> words: the one rule that ``predict`` on plain text, the classification readers
and pretraining text share, so training and prediction see the same words.

Within a text, every control character (tabs, vertical tabs, form feeds, the information
separators U+001C-U+001F, NEL U+0085), line and paragraph separators (U+2028, U+2029) and the
invisible word separators (zero-width space U+200B, word joiner U+2060, U+FEFF, U+180E) count
as spaces: they separate words and are never words themselves. Other invisible format
characters (soft hyphens, direction marks) are removed, except the zero-width (non-)joiners
U+200C and U+200D, which stay inside the word they are in (Persian, Indic scripts, emoji
sequences), and the tag characters that spell a subdivision's flag after its emoji; a token made
of nothing else is dropped, and a tag character anywhere else with it.
Files are split into texts on ``\\n`` alone (:func:`entangle.data.conll.decoded_lines`), so
none of these characters starts a new text.
"""

from __future__ import annotations

import regex

# URLs (scheme in any case), @mentions, #hashtags and e-mail addresses stay whole; words keep inner
# apostrophes and hyphens; every other non-space character is a token of its own (the CoNLL / WNUT
# convention), with what makes one symbol of it as a reader sees it: the combining marks after it
# (an emoji's variation selector U+FE0F, a keycap's U+20E3), an emoji's skin tone, the emoji it
# joins by U+200D (a family, a rainbow flag), the tag characters that spell a subdivision's flag
# after U+1F3F4 (England's: "gbeng" in tags, U+E0020-U+E007F; format characters, removed elsewhere);
# a flag's two regional indicators are one word (not Unicode's grapheme clusters, \X: a few of
# those join a letter to the symbol before it). The
# `regex` module's \w follows Unicode (TR18) and includes combining marks, so Yoruba tone marks
# (ẹ́ written with U+0301) and Indic vowel signs stay inside their word; `re`'s does not.
_WORD = regex.compile(r"(?i:https?://|www\.)\S+|[@#]\w+|[\w.+-]+@\w+(?:\.\w+)+|\w+(?:['’-]\w+)*|\p{RI}{2}"
                      r"|[^\w\s](?:\p{M}|\p{Emoji_Modifier}|\u200d\p{Extended_Pictographic}|[\U000e0020-\U000e007f])*")
_SPACE_LIKE = regex.compile(r"[\p{Cc}\p{Zl}\p{Zp}\u200b\u2060\ufeff\u180e]")
_REMOVED = regex.compile(r"[^\P{Cf}\u200c\u200d\U000e0020-\U000e007f]|(?<!\U0001f3f4[\U000e0020-\U000e007f]*)[\U000e0020-\U000e007f]")
_INVISIBLE = regex.compile(r"\p{Cf}+")


def split_words(text: str) -> list[str]:
    """Raw text -> words (an empty list for a text of spaces and invisible characters only)."""
    return [word for word in _WORD.findall(_REMOVED.sub("", _SPACE_LIKE.sub(" ", text))) if not _INVISIBLE.fullmatch(word)]
