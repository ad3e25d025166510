"""What the co-attention looks at: the character <-> subword cross-attention of each module for one
text, as numbers (:func:`cross_attention`) and as a picture (:func:`draw`, ``entangle attention``).

The weights are read where the model computes them: a hook on each module's CO-TRM block sees its
inputs and recomputes the block's attention probabilities (the fused attention kernel the model
runs does not return them), so the picture is of the model as it predicts, in eval mode.
"""

from __future__ import annotations

import contextlib
import re
import textwrap
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import decoders

from .data.features import CHAR_CLS, CHAR_SEP, SPACE, Featurizer
from .options import UsageError, file_in_the_way
from .plots import pyplot
from .predict import check_sentences

#: matplotlib's warning of a character its font has no glyph for.
_MISSING_GLYPH = re.compile(r"Glyph (\d+) .*missing from (?:current )?font")
#: How the character positions that are not a word's character are shown.
CHAR_NAMES = {CHAR_CLS: "<s>", CHAR_SEP: "</s>", SPACE: "␣"}


@dataclass
class CrossAttention:
    """The cross-attention of one window of one text.

    ``subword_to_char[i]`` (heads, n_subwords, n_chars): module i's subword side attending to the
    characters (each row sums to 1); ``char_to_subword[i]`` (heads, n_chars, n_subwords): its
    character side attending to the subwords; ``None`` for the last module of a side that no head
    reads (a model predicting from one side never runs, nor trains, it). ``chars`` name the
    character positions the co-attention reads (groups of K characters when the model shortens
    them K-fold).
    """

    words: list[str]
    chars: list[str]
    subwords: list[str]
    #: Per character / subword position: the index of its word, ``None`` for markers, spaces, specials.
    char_words: list[int | None]
    subword_words: list[int | None]
    subword_to_char: list[torch.Tensor | None]
    char_to_subword: list[torch.Tensor | None]
    #: The words ``[start, end)`` of the text this window covers (a long text has several windows).
    window: tuple[int, int]


def cross_attention(tagger, words: list[str]) -> CrossAttention:
    """The cross-attention of every co-attention module of ``tagger``'s model over ``words`` (its
    first window, when the text is longer than one)."""
    model = tagger.model
    if not isinstance(model, torch.nn.Module):
        raise UsageError("attention weights are read from the PyTorch model; an ONNX export does not give them")
    if model.config.fusion != "coattention":
        raise UsageError(f"this model joins characters and subwords by {model.config.fusion} fusion, not co-attention: "
                         "there is no character <-> subword attention to show")
    if not model.config.num_coattention_layers:
        raise UsageError("this model has no co-attention (m = 0): there is no character <-> subword attention to show")
    if not words:
        raise UsageError("no words in the text")
    try:  # a lone surrogate (bytes the command line's encoding could not decode) failed in the tokenizer
        check_sentences([words], "the text")
    except ValueError as err:
        raise UsageError(f"{err} (bytes not in the locale's encoding?)") from None
    config = model.config
    # Cut and featurized as for a word task, whatever the model's task: the inputs are the same, and
    # each position's word is known (a text or character task's windows do not say it).
    featurizer = Featurizer(tagger.tokenizer, config.max_chars, config.max_subwords, "word",
                            subword_char_spans=config.uses_subword_char_spans)
    window = featurizer.featurize([words])[0]
    batch = {key: value.to(model.device) for key, value in tagger.collator([window]).items()}
    stack = model.entangle.coattention
    seen: dict[tuple[str, int], torch.Tensor] = {}

    def keep(side: str, i: int):
        def hook(block, inputs, output):
            seen[side, i] = block.attention_probabilities(*inputs)[0].float().cpu()
        return hook

    handles = [layer.cross.register_forward_hook(keep(side, i))
               for side, layers in (("subword", stack.subword_layers), ("char", stack.char_layers))
               for i, layer in enumerate(layers)]
    was_training = model.training
    try:
        model.eval()
        with torch.inference_mode():
            # The sides the heads read, as the model runs when it predicts (the joint head reads both).
            heads = config.trained_sides
            read = ("char", "subword") if "joint" in heads else tuple(side for side in heads if side != "joint")
            model.entangle(batch["char_ids"], batch["char_mask"], batch["subword_ids"], batch["subword_mask"],
                           read, batch.get("subword_char_starts"), batch.get("subword_char_ends"))
    finally:
        model.train(was_training)
        for handle in handles:
            handle.remove()
    chars, char_words = _char_positions(window, config.char_downsample)
    layers = range(len(stack.subword_layers))
    return CrossAttention(
        words=words[window.start:window.end], chars=chars,
        subwords=_subword_names(tagger.tokenizer, window.subword_ids),
        char_words=char_words, subword_words=_subword_words(window, featurizer.subword_word_spans(window)),
        subword_to_char=[seen.get(("subword", i)) for i in layers], char_to_subword=[seen.get(("char", i)) for i in layers],
        window=(window.start, window.end),
    )


def _char_positions(window, rate: int) -> tuple[list[str], list[int | None]]:
    """Names and words of the character positions, K characters a position when shortened K-fold."""
    word_of = [None] * len(window.char_ids)
    for word, start in enumerate(window.char_word_starts):
        position = start
        while position < len(window.char_ids) and window.char_ids[position] not in (SPACE, CHAR_SEP):
            word_of[position] = word
            position += 1
    names = [CHAR_NAMES.get(c) or chr(c) for c in window.char_ids]
    groups = range(0, len(names), rate)
    # A shortened position belongs to the word of its first character that has one.
    return ["".join(names[g:g + rate]) for g in groups], [
        next((w for w in word_of[g:g + rate] if w is not None), None) for g in groups]


def _subword_names(tokenizer, ids: list[int]) -> list[str]:
    """Each subword's name: a byte-level BPE's tokens (RoBERTa's ``Ġcaf``, ``Ã©``) as the text they
    encode; a token holding part of a letter's bytes keeps its own name. Others as the vocabulary has them."""
    tokens = tokenizer.convert_ids_to_tokens(ids)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not isinstance(backend.decoder, decoders.ByteLevel):
        return tokens
    texts = [tokenizer.convert_tokens_to_string([token]) for token in tokens]
    return [token if "\ufffd" in text else text for token, text in zip(tokens, texts)]


def _subword_words(window, spans: list[tuple[int, int]]) -> list[int | None]:
    """The word of each subword position; ``None`` for the special tokens around the text."""
    owners: list[int | None] = [None] * len(window.subword_ids)
    for word, (start, end) in enumerate(spans):
        owners[start:end] = [word] * (end - start)
    return owners


def check_picture_path(output: str | Path) -> Path:
    """``output``, if its suffix names a format matplotlib writes (checked before a model is run)."""
    pyplot()  # the plots extra, or one clear error
    from matplotlib.backend_bases import FigureCanvasBase

    output = Path(output)
    formats = set(FigureCanvasBase.get_supported_filetypes()) - {"pgf"}  # pgf needs a LaTeX installation
    if output.suffix.lstrip(".").lower() not in formats:
        raise UsageError(f"{output}: give the picture a suffix of a format matplotlib writes ({', '.join(sorted(formats))})")
    if file := file_in_the_way(output.parent):
        raise UsageError(f"{output}: {file} is a file, not a directory")
    return output


def draw(attention: CrossAttention, output: str | Path, head: int | None = None) -> Path:
    """A figure per module and direction, subwords down and characters across, thin lines between
    words; ``head`` selects one attention head (default: their mean)."""
    plt = pyplot()
    output = check_picture_path(output)
    heads = next(w for w in attention.subword_to_char + attention.char_to_subword if w is not None).shape[0]
    if head is not None and not 0 <= head < heads:
        raise UsageError(f"--head {head}: the co-attention has heads 0 to {heads - 1}")
    pick = (lambda w: w.mean(0)) if head is None else (lambda w: w[head])
    rows = len(attention.subword_to_char)
    width = min(40.0, 3 + 0.16 * len(attention.chars))
    height = min(40.0, 1.5 + 0.2 * len(attention.subwords))
    # Words, characters and subwords are drawn as they are: a '$' pair would start math mode.
    with plt.rc_context({"text.parse_math": False}):
        figure, axes = plt.subplots(rows, 2, figsize=(2 * width, rows * height), squeeze=False)
        what = "mean of heads" if head is None else f"head {head}"
        for i in range(rows):
            # Two lines: a narrow panel (a short text) cut or overlapped a title of one.
            panels = ((attention.subword_to_char[i], False, f"module {i + 1}: subwords attend to characters\n(rows sum to 1)"),
                      (attention.char_to_subword[i], True, f"module {i + 1}: characters attend to subwords\n(columns sum to 1)"))
            for axis, (weights, transposed, title) in zip(axes[i], panels):
                if weights is None:  # the last module of a side no head reads
                    axis.set_axis_off()
                    axis.text(0.5, 0.5, f"{title.partition(chr(10))[0]}:\nnot run, no head reads it", ha="center",
                              va="center", fontsize=9)
                    continue
                weights = pick(weights).T if transposed else pick(weights)
                image = axis.imshow(weights.numpy(), aspect="auto", cmap="viridis", vmin=0)
                figure.colorbar(image, ax=axis, fraction=0.04, pad=0.02)  # each panel has its own scale
                axis.set_title(f"{title}, {what}", fontsize=9)
                axis.set_xticks(range(len(attention.chars)), attention.chars, fontsize=7)
                axis.set_yticks(range(len(attention.subwords)), attention.subwords, fontsize=7)
                for boundary in _boundaries(attention.char_words):
                    axis.axvline(boundary, color="white", linewidth=0.6)
                for boundary in _boundaries(attention.subword_words):
                    axis.axhline(boundary, color="white", linewidth=0.6)
        start, end = attention.window
        # About twelve characters of a 10-point title fit an inch of the figure: a long window's words are cut.
        figure.suptitle(textwrap.shorten(f"cross-attention, words {start + 1} to {end}: " + " ".join(attention.words),
                                         int(2 * width * 12), placeholder=" ..."), fontsize=10)
        output.parent.mkdir(parents=True, exist_ok=True)
        with _missing_glyphs_warned_once():  # where the text is laid out and drawn
            figure.tight_layout()
            figure.savefig(output, dpi=120)
        plt.close(figure)
    return output


@contextlib.contextmanager
def _missing_glyphs_warned_once() -> Iterator[None]:
    """matplotlib warns of each character its font lacks, a line a letter of an Amharic or Chinese
    text (and again for each panel): one warning naming them all instead."""
    missing = set()
    show = warnings.showwarning

    def kept(message, category, filename, lineno, file=None, line=None):  # after the filters, as shown
        if match := _MISSING_GLYPH.match(str(message)):
            missing.add(chr(int(match.group(1))))
        else:
            show(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():  # the filters as they are; what they let through comes to `kept`
        warnings.showwarning = kept
        yield
    if missing:
        shown = "".join(sorted(missing))
        warnings.warn(f"the font lacks {len(missing)} of the text's characters ({textwrap.shorten(shown, 40)}), drawn "
                      "as boxes: name a font that has them in matplotlib's rcParams['font.family']")


def _boundaries(owners: list[int | None]) -> list[float]:
    """Between positions whose words differ (markers, spaces and special tokens count as no word)."""
    return [i - 0.5 for i in range(1, len(owners)) if owners[i] != owners[i - 1]]
