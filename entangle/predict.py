"""Tagging words and raw text with a trained model; window predictions stitched back per sentence."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import gather_object
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from .data.batching import Collator, inference_batches
from .data.conll import Sentence
from .data.features import Featurizer, Window
from .data.raw_text import split_words
from .data.labels import check_labels
from .metrics import score
from .modeling import EntangleForTokenClassification
from .onnx_model import OnnxEntangleModel, is_onnx_dir

@dataclass
class TaggedSentence:
    words: list[str]
    labels: list[str]
    #: Probability the model gives each predicted label.
    probabilities: list[float]


class Tagger:
    """A trained model (PyTorch, or exported and run on ONNX Runtime) with its tokenizer and featurizer.

    ``compile=True`` runs inference through ``torch.compile(model, dynamic=True)``: a minute or two
    of compiling on first use, then faster (benchmarks/RESULTS.md); worth it for large inputs only.
    """

    def __init__(self, model: EntangleForTokenClassification | OnnxEntangleModel,
                 tokenizer: PreTrainedTokenizerBase | None, batch_size: int = 32, compile: bool = False):
        if compile and not isinstance(model, torch.nn.Module):
            raise ValueError("compile applies to PyTorch models; an ONNX model is already compiled by ONNX Runtime")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.compile = compile
        self._compiled: torch.nn.Module | None = None
        self.featurizer = Featurizer.for_model(model.config, tokenizer)
        pad_id = tokenizer.pad_token_id if tokenizer is not None else None
        self.collator = Collator(pad_id)

    @classmethod
    def create(cls, char: str | None, subword: str | None, labels: list[str], *, m: int = 2, side: str = "both",
               task: str = "ner", batch_size: int = 32, **config) -> "Tagger":
        """A new, untrained tagger around two encoders (names as for ``entangle train --char/--subword``)."""
        model, tokenizer = EntangleForTokenClassification.from_encoders(
            char, subword, labels, num_coattention_layers=m, side=side, task=task, **config
        )
        return cls(model, tokenizer, batch_size)

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs) -> "Tagger":
        """A saved model, or a directory written by :func:`~entangle.onnx_model.export_onnx` (then
        run on ONNX Runtime)."""
        if is_onnx_dir(path):
            model = OnnxEntangleModel.from_pretrained(path)
        else:
            model = EntangleForTokenClassification.from_pretrained(path)
        tokenizer = AutoTokenizer.from_pretrained(path) if model.config.uses_subword else None
        return cls(model, tokenizer, **kwargs)

    def fit(self, train: list[Sentence], dev: list[Sentence] | None = None, **options) -> dict:
        """Fine-tune on labelled sentences; ``options`` are :class:`~entangle.training.TrainingConfig` fields
        (``output_dir`` is required). Afterwards this tagger holds the best-on-dev model."""
        from .training import BEST_DIR, TrainingConfig, train as run_training

        if not isinstance(self.model, torch.nn.Module):
            raise TypeError("an ONNX model is for inference only; fine-tune the PyTorch model it was exported from")
        summary = run_training(self, train, dev, TrainingConfig(**options))
        best = Path(options["output_dir"]) / BEST_DIR
        if best.is_dir():
            self.model = EntangleForTokenClassification.from_pretrained(best)
        return summary

    def evaluate(self, sentences: list[Sentence], what: str = "evaluation data",
                 accelerator: Accelerator | None = None, return_predictions: bool = False):
        """``{side: metrics}`` for every trained side (one forward pass serves both); with an
        ``accelerator`` of several processes, each scores a share and all get the same metrics.
        ``return_predictions`` adds the predicted labels (``{side: per sentence}``) as a second value."""
        check_labels(sentences, self.labels, what)
        gold = [sentence.tags for sentence in sentences]
        predicted = self.predictions([sentence.words for sentence in sentences], accelerator)
        metrics = {side: score(self.model.config.task, gold, tags) for side, tags in predicted.items()}
        return (metrics, predicted) if return_predictions else metrics

    def predictions(self, sentences: list[list[str]], accelerator: Accelerator | None = None) -> dict[str, list[list[str]]]:
        """``{side: the most probable label of every word}`` for every trained side."""
        decode = self.model.config.id2label
        probabilities = self.probabilities(sentences, accelerator=accelerator)
        return {side: [[decode[i] for i in p.argmax(-1).tolist()] for p in per_sentence]
                for side, per_sentence in probabilities.items()}

    def save_pretrained(self, path: str | Path) -> None:
        self.model.save_pretrained(path)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(path)

    @property
    def labels(self) -> list[str]:
        return [self.model.config.id2label[i] for i in range(self.model.config.num_labels)]

    def probabilities(self, sentences: list[list[str]], sides: tuple[str, ...] | None = None,
                      accelerator: Accelerator | None = None) -> dict[str, list[torch.Tensor]]:
        """Per side, per sentence: a (n_words, n_labels) tensor of label probabilities.

        Each word's row comes from the one window that owns it, so every word gets exactly one.
        Under several processes (``accelerator``), each process runs every n-th window and the
        owned rows are gathered, so no window is dropped or counted twice.
        """
        sides = sides or self.model.config.trained_sides
        windows = self.featurizer.featurize(sentences)
        if accelerator is not None and accelerator.num_processes > 1:
            rows = gather_object(self._owned_rows(windows[accelerator.process_index :: accelerator.num_processes], sides))
        else:
            rows = self._owned_rows(windows, sides)
        out = {side: [torch.empty(len(words), self.model.config.num_labels) for words in sentences] for side in sides}
        for sentence, start, end, per_side in rows:
            for side in sides:
                out[side][sentence][start:end] = per_side[side]
        return out

    @torch.inference_mode()
    def _owned_rows(self, windows: list[Window], sides: tuple[str, ...]) -> list[tuple[int, int, int, dict]]:
        """``(sentence, own_start, own_end, {side: (n_owned, n_labels) probabilities})`` per window."""
        was_training = self.model.training
        self.model.eval()
        device = self.model.device
        forward = self._inference_forward()
        rows = []
        for chunk, batch in inference_batches(windows, self.batch_size, self.collator):
            result = forward(**{k: v.to(device) for k, v in batch.items()}, sides=sides)
            probs = {side: getattr(result, f"{side}_logits").float().softmax(-1).cpu() for side in sides}  # (batch, n_words, n_labels)
            for row, window in enumerate(chunk):
                first, last = window.own_start - window.start, window.own_end - window.start
                rows.append((window.sentence, window.own_start, window.own_end,
                             {side: probs[side][row, first:last] for side in sides}))
        self.model.train(was_training)
        return rows

    def _inference_forward(self):
        """The model, or with ``compile`` its compiled form (compiled again only if ``fit`` replaced the model)."""
        if not self.compile:
            return self.model
        if self._compiled is None or self._compiled._orig_mod is not self.model:
            self._compiled = torch.compile(self.model, dynamic=True)
        return self._compiled

    def tag(self, sentences: list[list[str]], side: str | None = None) -> list[TaggedSentence]:
        """Label every word of pre-split sentences from ``side`` (default: the model's prediction side)."""
        side = side or self.model.config.predict_side
        if side not in self.model.config.trained_sides:
            raise ValueError(f"this model has no {side!r} head; it was trained with side={self.model.config.side!r}")
        probs = self.probabilities(sentences, (side,))[side]
        return [self._decode(words, p) for words, p in zip(sentences, probs)]

    def tag_text(self, texts: list[str], side: str | None = None) -> list[TaggedSentence]:
        """Label raw strings: each is split into words with :func:`split_words` first."""
        return self.tag([split_words(text) for text in texts], side)

    def _decode(self, words: list[str], probs: torch.Tensor) -> TaggedSentence:
        best, index = probs.max(-1)
        return TaggedSentence(words, [self.model.config.id2label[i] for i in index.tolist()], best.tolist())
