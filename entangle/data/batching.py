"""Windows -> padded tensors. Padding is per batch, to the longest window in it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler
from transformers.trainer_pt_utils import LengthGroupedSampler

from .features import CHAR_PAD, IGNORE, Featurizer, Window, check_words

#: Sentences a featurizing worker prepares at a time, in batches (``featurized_batches``): small
#: enough that the model starts soon, big enough that sorting by length still saves padding.
CHUNK_BATCHES = 2


def pad_rows(rows: list[list[int]], value: int) -> torch.Tensor:
    """(rows, longest row) ids, each row padded with ``value`` (for fine-tuning and pretraining batches).
    Filled in a NumPy array: a nested list through ``torch.tensor`` took 5x as long, most of
    collating, which a GPU waits on (benchmarks/RESULTS.md, "On a GPU")."""
    out = np.full((len(rows), max(map(len, rows), default=0)), value, dtype=np.int64)
    for row, ids in zip(out, rows):
        row[: len(ids)] = ids
    return torch.from_numpy(out)


def subword_padding(pad_id: int | None) -> int:
    """The id subword rows are padded with: the tokenizer's, or 0 for one without a padding token
    (GPT-2's, Llama's): any id will do, the mask hides it."""
    return pad_id if pad_id is not None else 0


def _mask(rows: list[list[int]]) -> torch.Tensor:
    lengths = torch.tensor([len(row) for row in rows])
    return (torch.arange(int(lengths.max())) < lengths[:, None]).long()


class Collator:
    """Pads a list of windows; word positions pad with 0 (a real index) and labels with -100."""

    def __init__(self, subword_pad_id: int | None):
        self.subword_pad_id = subword_padding(subword_pad_id)

    def __call__(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        batch: dict[str, torch.Tensor] = {}
        if windows[0].char_ids:
            chars = [w.char_ids for w in windows]
            batch["char_ids"] = pad_rows(chars, CHAR_PAD)  # (batch, n_chars)
            batch["char_mask"] = _mask(chars)
        if windows[0].char_word_starts:
            batch["char_word_starts"] = pad_rows([w.char_word_starts for w in windows], 0)  # (batch, n_units)
        if windows[0].subword_ids:
            subwords = [w.subword_ids for w in windows]
            batch["subword_ids"] = pad_rows(subwords, self.subword_pad_id)  # (batch, n_subwords)
            batch["subword_mask"] = _mask(subwords)
        if windows[0].subword_word_starts:
            batch["subword_word_starts"] = pad_rows([w.subword_word_starts for w in windows], 0)
        if windows[0].subword_char_starts:
            # Padding points at the start marker; the model zeroes padded positions anyway.
            batch["subword_char_starts"] = pad_rows([w.subword_char_starts for w in windows], 0)  # (batch, n_subwords)
            batch["subword_char_ends"] = pad_rows([w.subword_char_ends for w in windows], 0)
        if windows[0].labels is not None:
            batch["labels"] = pad_rows([w.labels for w in windows], IGNORE)  # (batch, n_units)
        return batch


class EpochWindows(Dataset):
    """Training windows behind one loader for the whole run. ``redraw`` replaces them with an epoch's own
    draw (a noisy or partly lower-cased copy), so no earlier epoch's copy stays in memory (a loader
    prepared per epoch would: Accelerate keeps every loader it prepares). Not named ``set_epoch``:
    Accelerate calls that on a dataset at each pass, counting passes from 0, also after a resume."""

    def __init__(self, draw: Callable[[int | None], list[Window]]):
        self.draw = draw
        self.windows = draw(None)

    def redraw(self, epoch: int) -> None:
        self.windows = self.draw(epoch)

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, index: int) -> Window:
        return self.windows[index]


class _LengthGrouped(LengthGroupedSampler):
    """Length groups of what the dataset holds when an epoch starts (a redrawn copy has other lengths)."""

    def __init__(self, windows: Sequence[Window], batch_size: int, generator: torch.Generator):
        super().__init__(batch_size, lengths=[w.length for w in windows], generator=generator)
        self.windows = windows

    def __len__(self) -> int:
        return len(self.windows)

    def __iter__(self):
        self.lengths = [w.length for w in self.windows]
        return super().__iter__()


def train_loader(windows: Sequence[Window], batch_size: int, collator: Collator, generator: torch.Generator,
                 group_by_length: bool = True, pin_memory: bool = False) -> DataLoader:
    """Shuffled batches; grouped by length (shuffled groups of similar windows) to waste less padding;
    with ``pin_memory`` (for a GPU) in page-locked memory, which a copy to the GPU need not wait on."""
    sampler: Sampler | None = None
    if group_by_length:
        sampler = _LengthGrouped(windows, batch_size, generator)
    # The loader gets the generator too: otherwise starting each epoch's iterator draws from the
    # global RNG, which shifts dropout after a mid-epoch resume.
    return DataLoader(windows, batch_size=batch_size, sampler=sampler, shuffle=sampler is None,
                      generator=generator, collate_fn=collator, pin_memory=pin_memory)


def inference_batches(windows: list[Window], batch_size: int, collator: Collator):
    """Batches of windows sorted by length (least padding); yields ``(windows, tensors)``."""
    ordered = sorted(windows, key=lambda w: w.length, reverse=True)
    for i in range(0, len(ordered), batch_size):
        chunk = ordered[i : i + batch_size]
        yield chunk, collator(chunk)


class FeaturizedChunks(Dataset):
    """Sentences in chunks, each featurized and cut into length-sorted inference batches where it
    is loaded, in a DataLoader worker process: featurizing is Python on the CPU, and in the main
    process it held a GPU idle. Windows come back with their bookkeeping only (the tensors carry
    the rest), their sentence counted in the whole input."""

    def __init__(self, sentences: list[list[str]], featurizer: Featurizer, collator: Collator, batch_size: int):
        self.sentences, self.featurizer, self.collator = sentences, featurizer, collator
        self.batch_size = batch_size
        self.chunk = CHUNK_BATCHES * batch_size

    def __len__(self) -> int:
        return -(-len(self.sentences) // self.chunk)

    def __getitem__(self, index: int) -> list[tuple[list[Window], dict[str, torch.Tensor]]]:
        start = index * self.chunk
        windows = self.featurizer.featurize(self.sentences[start : start + self.chunk])
        return [([Window(w.sentence + start, w.start, w.end, w.own_start, w.own_end, w.own_rows, w.own_units)
                  for w in chunk], batch)
                for chunk, batch in inference_batches(windows, self.batch_size, self.collator)]


def _unchanged(item):
    return item


def featurized_batches(sentences: list[list[str]], featurizer: Featurizer, collator: Collator, batch_size: int,
                       workers: int = 0) -> Iterator[tuple[list[Window], dict[str, torch.Tensor]]]:
    """``inference_batches`` of the sentences' windows. With ``workers``, they are featurized in
    that many processes, a chunk of ``CHUNK_BATCHES`` batches' sentences each, while the caller
    runs the model on the chunks already made (batches are then sorted by length within a chunk);
    an input of one chunk or less is featurized here."""
    chunks = FeaturizedChunks(sentences, featurizer, collator, batch_size)  # cheap: it only holds the input
    if workers <= 0 or len(chunks) <= 1:
        yield from inference_batches(featurizer.featurize(sentences), batch_size, collator)
        return
    check_words(sentences)  # here, so a bad word is one line counted in the whole input, not a worker's traceback
    # A tokenizer that already ran batches in parallel here would print, in each forked worker, that
    # it turns its parallelism off there; the workers are the parallelism now.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for prepared in DataLoader(chunks, batch_size=None, num_workers=min(workers, len(chunks)), collate_fn=_unchanged):
        yield from prepared
