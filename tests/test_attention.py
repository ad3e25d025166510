"""`entangle attention`: the co-attention's character <-> subword weights, as the model uses them."""

import errno
from pathlib import Path

import pytest
import torch

from entangle.attention import cross_attention, draw
from entangle.options import UsageError
from entangle.predict import Tagger
from tiny import WIDTH, tiny_model

WORDS = ["Peter", "lives", "in", "New", "York"]


def test_the_probabilities_are_those_the_block_weighs_its_values_by():
    """Recomputed weights, applied to the block's values, give the block's own output."""
    torch.manual_seed(0)
    model, _ = tiny_model(m=1)
    block = model.entangle.coattention.subword_layers[0].cross.eval()
    x, context = torch.randn(2, 5, WIDTH), torch.randn(2, 9, WIDTH)
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[1, 6:] = False
    probabilities = block.attention_probabilities(x, context, mask)  # (batch, heads, n_q, n_kv)
    assert torch.allclose(probabilities.sum(-1), torch.ones(2, block.num_heads, 5))
    assert probabilities[1, :, :, 6:].abs().max() == 0
    values = block._heads(block.key_value(context).chunk(2, dim=-1)[1])
    attended = (probabilities @ values).transpose(1, 2).reshape(2, 5, WIDTH)
    mixed = block.attention_norm(x + block.attention_output(attended))
    assert torch.allclose(block.output_norm(mixed + block.feed_forward(mixed)), block(x, context, mask), atol=1e-5)


@pytest.mark.parametrize("options", [{}, {"char_downsample": 2}, {"positional_alignment": True}],
                         ids=["plain", "downsample2", "positional-alignment"])
def test_every_module_and_direction_is_read(options, tmp_path):
    model, tokenizer = tiny_model(m=2, **options)
    attention = cross_attention(Tagger(model, tokenizer), WORDS)
    n_chars = -(-(len(" ".join(WORDS)) + 2) // options.get("char_downsample", 1))  # markers included, K a position
    n_subwords = len(attention.subwords)
    assert len(attention.chars) == len(attention.char_words) == n_chars
    assert len(attention.subword_to_char) == len(attention.char_to_subword) == 2
    for forward, backward in zip(attention.subword_to_char, attention.char_to_subword):
        assert forward.shape == (2, n_subwords, n_chars) and backward.shape == (2, n_chars, n_subwords)
        assert torch.allclose(forward.sum(-1), torch.ones(2, n_subwords), atol=1e-5)
    # Each word's positions are marked as its own; markers, spaces and special tokens as none.
    assert attention.subword_words[0] is None and attention.subword_words[-1] is None
    assert sorted({w for w in attention.subword_words if w is not None}) == list(range(len(WORDS)))
    if "char_downsample" not in options:
        assert "".join(c for c, w in zip(attention.chars, attention.char_words) if w == 3) == "New"
    assert draw(attention, tmp_path / "a.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("side", ["subword", "char"])
def test_a_one_sided_model_shows_no_last_module_of_the_side_no_head_reads(side, tmp_path):
    """That module never runs when the model predicts, nor trains: drawn, it showed initial weights."""
    model, tokenizer = tiny_model(m=2, side=side)
    attention = cross_attention(Tagger(model, tokenizer), WORDS)
    unread = attention.char_to_subword if side == "subword" else attention.subword_to_char
    read = attention.subword_to_char if side == "subword" else attention.char_to_subword
    assert unread[0] is not None and unread[1] is None and all(w is not None for w in read)
    assert draw(attention, tmp_path / "a.png").read_bytes().startswith(b"\x89PNG")


def test_a_model_without_coattention_or_a_wrong_head_is_one_clear_error(tmp_path):
    model, tokenizer = tiny_model(m=0, side="subword")
    with pytest.raises(UsageError, match="no co-attention"):
        cross_attention(Tagger(model, tokenizer), WORDS)
    from tiny import charbert_model

    with pytest.raises(UsageError, match="joins characters and subwords by charbert fusion, not co-attention"):
        cross_attention(Tagger(*charbert_model()), WORDS)  # it said "m = 0"
    model, tokenizer = tiny_model(m=1)
    # A byte the command line's encoding could not decode (`entangle attention M $'caf\xe9'`): a traceback in the tokenizer.
    with pytest.raises(UsageError, match="not valid Unicode text"):
        cross_attention(Tagger(model, tokenizer), ["caf\udce9", "ok"])
    attention = cross_attention(Tagger(model, tokenizer), WORDS)
    with pytest.raises(UsageError, match="heads 0 to 1"):
        draw(attention, tmp_path / "a.png", head=2)
    for name in ("a.txt", "a", "a.pgf"):  # pgf: matplotlib writes it only with LaTeX installed
        with pytest.raises(UsageError, match="a suffix of a format matplotlib writes"):
            draw(attention, tmp_path / name)
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match=r"file is a file, not a directory"):
        draw(attention, tmp_path / "file" / "a.png")
    assert draw(attention, tmp_path / "new" / "a.png").is_file()  # a missing directory is made
    # Dollar signs are text, not matplotlib's math mode (which failed on "$ ^ ^ $").
    money = cross_attention(Tagger(model, tokenizer), ["costs", "$", "^", "^", "$", "today"])
    assert draw(money, tmp_path / "money.png").read_bytes().startswith(b"\x89PNG")


def test_a_text_task_shows_its_words_too():
    model, tokenizer = tiny_model(m=1, task="classification", labels=["neg", "pos"])
    attention = cross_attention(Tagger(model, tokenizer), WORDS)
    assert sorted({w for w in attention.char_words if w is not None}) == list(range(len(WORDS)))


def test_byte_level_subwords_are_shown_as_the_text_they_encode():
    """RoBERTa-style tokens were drawn as the vocabulary spells them (``Ġlives``, ``Ã©``)."""
    model, tokenizer = tiny_model(m=1, family="roberta")
    attention = cross_attention(Tagger(model, tokenizer), WORDS + ["café"])
    assert not any("Ġ" in name for name in attention.subwords)
    for word, text in enumerate(WORDS):
        assert "".join(n for n, w in zip(attention.subwords, attention.subword_words) if w == word).strip() == text
    # A letter split across tokens (é is two bytes) cannot be shown by halves: those keep their names.
    cafe = [n for n, w in zip(attention.subwords, attention.subword_words) if w == len(WORDS)]
    assert "".join(cafe).strip() == "café" or any("Ã" in n for n in cafe)


def test_characters_the_font_lacks_are_one_warning(tmp_path):
    """matplotlib warned of each missing glyph, every panel again: dozens of lines for one Amharic word."""
    model, tokenizer = tiny_model(m=1)
    attention = cross_attention(Tagger(model, tokenizer), ["ሰላም", "world"])
    with pytest.warns(UserWarning) as caught:
        draw(attention, tmp_path / "a.png")
    messages = [str(warning.message) for warning in caught]
    assert messages == ["the font lacks 3 of the text's characters (ላምሰ), drawn as boxes: name a font that has them in "
                        "matplotlib's rcParams['font.family']"]


def test_other_warnings_while_drawing_keep_the_filters(tmp_path, monkeypatch):
    """Recorded and warned again, they lost their module (a user's filter by module no longer
    matched) and their once-per-place registry."""
    import warnings

    import matplotlib.figure

    def tight_layout(self, *args, **kwargs):
        warnings.warn("a layout warning", UserWarning)

    monkeypatch.setattr(matplotlib.figure.Figure, "tight_layout", tight_layout)
    model, tokenizer = tiny_model(m=1)
    attention = cross_attention(Tagger(model, tokenizer), WORDS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message="a layout warning", module=__name__)
        draw(attention, tmp_path / "a.png")
    assert [str(w.message) for w in caught] == []
    with pytest.warns(UserWarning, match="a layout warning"):
        draw(attention, tmp_path / "b.png")


def test_a_text_too_long_for_a_file_name_is_drawn(tmp_path, monkeypatch, capsys):
    """The command checks whether its text names a file; past the system's 255 bytes that check
    failed (File name too long) and nothing was drawn."""
    from entangle import cli

    is_file = Path.is_file

    def as_python_3_13(path):  # Python 3.14's is_file answers False itself, without the fix
        if len(path.name.encode()) > 255:
            raise OSError(errno.ENAMETOOLONG, "File name too long", str(path))
        return is_file(path)

    monkeypatch.setattr(Path, "is_file", as_python_3_13)
    model, tokenizer = tiny_model(m=1)
    monkeypatch.setattr(cli, "_tagger", lambda path, device: Tagger(model, tokenizer))
    text = " ".join(WORDS * 12)  # 312 characters
    cli.main(["attention", "unused", text, "--output", str(tmp_path / "a.png")])
    assert (tmp_path / "a.png").read_bytes().startswith(b"\x89PNG")
    assert capsys.readouterr().err.endswith(" of 60\n")  # the first window of its 60 words
