"""Applying a trained model: word tags, character labels or text classes; window predictions
stitched back per sentence (or averaged per text)."""

from __future__ import annotations

import inspect
import re
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import gather_object, set_seed
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from .data.batching import Collator, featurized_batches, inference_batches
from .data.features import Featurizer, Window
from .data.words import split_words
from .decoding import DECODINGS
from .modeling import EntangleConfig, EntangleForSequenceClassification, EntangleForTokenClassification, EntangleModel
from .modeling.encoders import window_limits
from .modeling.kernels import attention_kernels
from .modeling.loading import (from_hub, load_tokenizer, local_dir, looks_local, read_config, reading_weights,
                               refuse_missing_weights, weights_file)
from .onnx_model import OnnxEntangleModel
from .options import RUN_ARGS, ModelLoadError, UsageError, is_onnx_dir
from .schema import CONFIG_NAMES, MODEL_FIELDS, ModelOptions
from .tasks import Task, get_task, split_by_words
from .training import BEST_DIR, TrainingConfig, train as run_training

#: The options of :meth:`Tagger.create` that are ``entangle train``'s model options, and the
#: further configuration fields it passes through.
MODEL_OPTIONS = MODEL_FIELDS - {"char", "subword"}
CONFIG_FIELDS = set(inspect.signature(EntangleConfig.__init__).parameters) - {"self", "kwargs"}


# What a model predicts for one input, per unit of its task, and how ``entangle predict`` writes it:
# ``conll`` (the columns a tagger's user expects) or ``jsonl`` (one JSON object per input).
@dataclass
class TaggedSentence:
    words: list[str]
    labels: list[str]
    #: Probability the model gives each predicted label.
    probabilities: list[float]

    def to_json(self) -> dict:
        return {"words": self.words, "labels": self.labels, "probabilities": [round(p, 6) for p in self.probabilities]}

    def to_conll(self) -> str:
        """word<TAB>label<TAB>probability per line, a blank line after the sentence (a word's tabs and
        line breaks, which pre-split words may hold, written as spaces)."""
        return "".join(f"{w.translate(_ONE_LINE)}\t{label}\t{p:.4f}\n"
                       for w, label, p in zip(self.words, self.labels, self.probabilities)) + "\n"


@dataclass
class TaggedCharacters:
    words: list[str]
    #: Per word, a label per character.
    labels: list[list[str]]
    probabilities: list[list[float]]

    def to_json(self) -> dict:
        return {"words": self.words, "labels": self.labels}

    def to_conll(self) -> str:
        """word<TAB>its runs of equally labelled characters (``kanerie`` -> ``kane:WIX|rie:ES``, with
        ``\\``, ``|`` and ``:`` in a run or a label escaped by a backslash, so that any word reads back);
        tabs and line breaks in a word written as spaces, as in :meth:`TaggedSentence.to_conll`."""
        return "".join(f"{word}\t{_segments(word, labels)}\n" for word, labels in
                       zip((w.translate(_ONE_LINE) for w in self.words), self.labels)) + "\n"


@dataclass
class ClassifiedText:
    text: str
    #: ``None`` for a text without words (nothing to classify).
    label: str | None
    probability: float | None
    #: Every class's probability.
    distribution: dict[str, float]

    def to_json(self) -> dict:
        return {"text": self.text, "label": self.label,
                "probability": None if self.probability is None else round(self.probability, 6),
                "probabilities": {k: round(v, 6) for k, v in self.distribution.items()}}

    def to_conll(self) -> str:
        """label<TAB>probability<TAB>text (an empty line for a text without words); the text's tabs and
        line breaks (a CSV cell may hold them) are written as spaces, so that each text stays one line
        of three columns."""
        text = self.text.translate(_ONE_LINE)
        return f"{self.label}\t{self.probability:.4f}\t{text}\n" if self.label is not None else "\n"


#: A tab, and everything ``str.splitlines`` breaks a line at, as a space.
_ONE_LINE = str.maketrans(dict.fromkeys("\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029", " "))


def _segments(word: str, labels: list[str]) -> str:
    runs: list[list] = []
    for char, label in zip(word, labels):
        if runs and runs[-1][1] == label:
            runs[-1][0] += char
        else:
            runs.append([char, label])
    return "|".join(f"{_escape(chars)}:{_escape(label)}" for chars, label in runs)


def _escape(segment: str) -> str:
    return re.sub(r"([\\|:])", r"\\\1", segment)


def model_class(task: str) -> type:
    """The head family a task needs: per text, or per word / character."""
    return EntangleForSequenceClassification if get_task(task).unit == "text" else EntangleForTokenClassification


#: ``Tagger(autocast=...)``: the half-precision type of each choice (``None``: float32 throughout).
AUTOCAST_DTYPES = {None: None, "bf16": torch.bfloat16, "fp16": torch.float16}
#: Batches whose probabilities may wait on the GPU while later ones are queued (``_owned_rows``).
QUEUED_BATCHES = 2
#: Batches' worth of sentences ``predict_stream`` predicts at a time. Predicting all at once holds
#: about 0.8 KB per word (755 MB more at the peak for 936k words; in chunks, 138 MB), and sorting
#: by length within 256 batches pads little more than sorting a whole 26k-sentence input (at batch
#: 32, 1.7% of the characters against 0.4%) (``benchmarks/results/streaming.json``).
STREAM_BATCHES = 256


def batch_to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """The batch on ``device``; to a GPU copied from pinned memory without waiting, so the host can
    go on collating while the copies run."""
    pinned = device.type == "cuda"
    return {k: (v.pin_memory() if pinned else v).to(device, non_blocking=pinned) for k, v in batch.items()}


def model_dir(path: str | Path) -> str:
    """The model of a training output directory (OUTPUT/model), else ``path`` as given (a model
    directory, or a hub name: :meth:`Tagger.from_pretrained` tells them apart and names what is wrong)."""
    directory = Path(path).expanduser()
    if (directory / "config.json").is_file():
        return str(path)
    if (directory / BEST_DIR).is_dir():
        return str(directory / BEST_DIR)
    if (directory / RUN_ARGS).is_file():
        raise ModelLoadError(f"{path}: a training output directory without a model: no {BEST_DIR}/ in it yet "
                             "(it is written after the first epoch)")
    return str(path)


def check_sentences(sentences, what: str = "sentences") -> list[list[str]]:
    """Pre-split input: sentences, each a list of words (strings), returned as a list of lists (a
    generator is read once, here). A string in their place would be read letter by letter, silently;
    a word that is not text would fail deep in the tokenizer."""
    if isinstance(sentences, str) or not isinstance(sentences, Iterable):
        raise TypeError(f"{what}: expected a list of sentences, each a list of words, got "
                        f"{'a string' if isinstance(sentences, str) else type(sentences).__name__} "
                        "(for raw text use tag_text or classify)")
    checked = []
    for number, words in enumerate(sentences):
        if isinstance(words, str) or not isinstance(words, (list, tuple)):
            raise TypeError(f"{what}: sentence {number} must be a list of words, got {type(words).__name__} "
                            "(for raw text use tag_text or classify)")
        for word in words:
            if not isinstance(word, str):
                raise TypeError(f"{what}: sentence {number} has a word that is not a string: {word!r}")
            try:
                word.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"{what}: sentence {number} has a word that is not valid Unicode text (a lone "
                                 f"surrogate): {word!r}") from None
        checked.append(list(words))
    return checked


def _check_windows(config: EntangleConfig, tokenizer: PreTrainedTokenizerBase | None, config_file: str) -> None:
    """A saved ``max_chars`` / ``max_subwords`` its encoders can take: an edited config.json (checked
    when a model is built, not when it is loaded) failed at the first long input, in the encoder."""
    for name, limit in window_limits(config.char_config, config.subword_config, tokenizer).items():
        if (getattr(config, name) or 0) > limit:
            raise ModelLoadError(f"{config_file}: {name}={getattr(config, name)} is more than its encoder takes ({limit}): "
                                 f"set it to {limit} or less")


def _refuse_base_model(architectures: list[str] | None, config_file: str, source) -> None:
    if architectures == [EntangleModel.__name__]:
        raise ModelLoadError(f"{config_file}: a base model without task heads (written by entangle "
                             f"pretrain-coattention): fine-tune it with entangle train --coattention-init {source} first")


def _check_texts(texts) -> list[str]:
    """Raw input: strings, returned as a list (a generator is read once, here; a string in their
    place would be one text per letter)."""
    if isinstance(texts, str) or not isinstance(texts, Iterable):
        raise TypeError(f"texts: expected a list of strings, got {texts!r:.80}")
    texts = list(texts)
    for number, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts: text {number} is not a string: {text!r:.80}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"texts: text {number} is not valid Unicode text (a lone surrogate): {text!r:.80}") from None
    return texts


def torch_device(name: str | torch.device) -> torch.device:
    """``"auto"`` (the GPU when there is one, else the CPU) or a device name torch knows and this
    machine has; anything else is a :class:`~entangle.options.UsageError` saying which."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise UsageError(f"unknown device {name!r} (auto, cpu, cuda, cuda:1, ...)") from None
    if device.type not in ("cpu", "cuda"):
        raise UsageError(f"device {name!r}: entangle runs on the CPU or a CUDA GPU (auto, cpu, cuda, cuda:1, ...)")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"device {name!r}: this machine has no CUDA device")
    if device.type == "cuda" and (device.index or 0) >= (count := torch.cuda.device_count()):
        raise UsageError(f"device {name!r}: this machine has {count} CUDA device{'s' * (count > 1)} "
                         f"(cuda:0{f' to cuda:{count - 1}' if count > 1 else ''})")
    return device


class Tagger:
    """A trained model (PyTorch, or exported and run on ONNX Runtime) with its tokenizer and featurizer.

    ``compile=True`` runs inference through ``torch.compile(model, dynamic=True)``: a minute or two
    of compiling on first use, then faster (benchmarks/RESULTS.md); worth it for large inputs only.
    ``autocast="bf16"`` (or ``"fp16"``) runs inference under ``torch.autocast``: matrix products in
    half precision, weights and the rest in float32; faster where the processor has half-precision
    units (benchmarks/RESULTS.md), and probabilities differ from float32 in the second or third digit.
    ``decoding="constrained"`` (the default) keeps the task's label grammar: NER tags are the most
    probable valid IOB2 sequence (:mod:`entangle.decoding`); ``"argmax"`` labels each unit on its own.
    ``featurize_workers`` processes featurize the input while the model runs (default none: on an
    H100, four of them gave no end-to-end speed over featurizing here, benchmarks/RESULTS.md "On a
    GPU again", and a process forked beside CUDA's threads can deadlock).
    """

    def __init__(self, model: EntangleForTokenClassification | EntangleForSequenceClassification | OnnxEntangleModel,
                 tokenizer: PreTrainedTokenizerBase | None, batch_size: int = 32, compile: bool = False,
                 autocast: str | None = None, decoding: str = "constrained", featurize_workers: int = 0):
        if (compile or autocast) and not isinstance(model, torch.nn.Module):
            raise ValueError("compile and autocast apply to PyTorch models; an ONNX model runs on ONNX Runtime")
        if autocast not in AUTOCAST_DTYPES:
            raise ValueError(f"autocast must be one of {', '.join(map(str, AUTOCAST_DTYPES))}, got {autocast!r}")
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number of at least 1, got {batch_size!r}")
        if isinstance(featurize_workers, bool) or not isinstance(featurize_workers, int) or featurize_workers < 0:
            raise ValueError(f"featurize_workers must be a whole number of at least 0, got {featurize_workers!r}")
        if tokenizer is None and model.config.uses_subword:
            raise ValueError("this model reads subwords: give its tokenizer (Tagger.from_pretrained loads both)")
        if tokenizer is not None and model.config.uses_subword and len(tokenizer) > model.config.subword_config.vocab_size:
            raise ValueError(f"the tokenizer has {len(tokenizer)} tokens, more than the subword encoder's "
                             f"{model.config.subword_config.vocab_size} embeddings: not this model's tokenizer")
        self.model = model
        self.decoding = decoding
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.compile = compile
        self.autocast = autocast
        self.featurize_workers = featurize_workers
        self._compiled: torch.nn.Module | None = None
        self.featurizer = Featurizer.for_model(model.config, tokenizer)
        pad_id = tokenizer.pad_token_id if tokenizer is not None else None
        self.collator = Collator(pad_id)

    @classmethod
    def create(cls, char: str | None, subword: str | None, labels: list[str], *, task: str = "ner",
               batch_size: int = 32, seed: int | None = 42, **options) -> "Tagger":
        """A new, untrained model around two encoders (names as for ``entangle train --char/--subword``)
        for ``task`` (see :mod:`entangle.tasks`). ``options`` are ``entangle train``'s model options
        (:class:`~entangle.schema.ModelOptions`: ``coattention_layers``, ``side``, ``fusion``, ...,
        with the same defaults) or further :class:`~entangle.modeling.EntangleConfig` fields.
        ``seed`` fixes the new layers' initialisation (as ``entangle train --seed`` does, with the
        same default), so the same seed gives the same model here and on the command line; ``None``
        leaves the random state as it is."""
        for key in options.keys() - MODEL_OPTIONS:
            if key in CONFIG_NAMES.values():
                option = next(name for name, field in CONFIG_NAMES.items() if field == key)
                raise TypeError(f"Tagger.create: give {key} as {option} (entangle train's name)")
            if key not in CONFIG_FIELDS:
                raise TypeError(f"Tagger.create: unknown option {key!r}; the model options are "
                                f"{', '.join(sorted(MODEL_OPTIONS))}, or any other EntangleConfig field")
        get_task(task).check_label_set(labels)
        if seed is not None:
            set_seed(seed)
        named = {key: options.pop(key) for key in MODEL_OPTIONS & options.keys()}
        config = {**ModelOptions(**named).config_kwargs(), **options}
        model, tokenizer = model_class(task).from_encoders(char, subword, labels, task=task, **config)
        return cls(model, tokenizer, batch_size)

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str | None = "auto", **kwargs) -> "Tagger":
        """A saved model, or a directory written by :func:`~entangle.onnx_export.export_onnx` (then
        run on ONNX Runtime). A PyTorch model goes to ``device``: ``"auto"`` is the GPU when there is
        one, else the CPU; ``None`` leaves it on the CPU it was loaded on.

        A path that looks local (:func:`~entangle.modeling.loading.looks_local`) is never sent to
        the hub; its ``config.json`` is checked before the model is built, and a missing directory,
        a missing or invalid ``config.json``, a missing, truncated or corrupt weight file or
        tokenizer raise a :class:`~entangle.options.ModelLoadError` naming the file. Any
        other name is looked up on the hub (at once in the cache alone when the hub does not answer).
        """
        path = model_dir(path)  # a training output directory: its model
        if device is not None:  # a bad name fails before the model loads (an export's too)
            torch_device(device)  # the name itself goes to .to(): "auto" warns of no GPU for an export
        if not looks_local(path):
            def load(**options):
                config = EntangleConfig.from_pretrained(path, **options)
                _refuse_base_model(config.architectures, f"{path}: its config.json", path)
                with reading_weights(path):
                    model, loaded = model_class(config.task).from_pretrained(path, output_loading_info=True, **options)
                refuse_missing_weights(loaded, path)
                tokenizer = AutoTokenizer.from_pretrained(path, **options) if config.uses_subword else None
                _check_windows(model.config, tokenizer, f"{path}: its config.json")
                return model, tokenizer

            return cls(*from_hub(str(path), load), **kwargs).to(device)
        directory = local_dir(path)
        config_file = directory / "config.json"
        saved = read_config(directory, "a saved entangle model")
        if saved.get("model_type") != EntangleConfig.model_type:
            raise ModelLoadError(f"{config_file}: the config of a {saved.get('model_type')!r} model, not of an entangle model")
        _refuse_base_model(saved.get("architectures"), str(config_file), directory)
        if is_onnx_dir(directory):
            model = OnnxEntangleModel.from_pretrained(directory)
        else:
            try:
                config = EntangleConfig.from_pretrained(directory)
            except (ValueError, KeyError, TypeError) as err:
                raise ModelLoadError(f"{config_file}: {err}") from None
            with reading_weights(weights := weights_file(directory)):
                model, loaded = model_class(config.task).from_pretrained(directory, output_loading_info=True)
            refuse_missing_weights(loaded, weights)
        tokenizer = load_tokenizer(directory) if model.config.uses_subword else None
        _check_windows(model.config, tokenizer, str(config_file))
        return cls(model, tokenizer, **kwargs).to(device)

    def to(self, device: str | torch.device | None) -> "Tagger":
        """Move the PyTorch model to ``device`` (``"auto"``: the GPU when there is one); an ONNX model
        stays on ONNX Runtime's CPU provider (a GPU asked for by name is warned of). Returns this tagger."""
        if device is None:
            return self
        chosen = torch_device(device)
        if isinstance(self.model, torch.nn.Module):
            self.model.to(chosen)
        elif chosen.type == "cuda" and device != "auto":
            warnings.warn(f"device {str(device)!r}: an ONNX export runs on ONNX Runtime's CPU provider, not the GPU")
        return self

    @property
    def task(self) -> Task:
        return get_task(self.model.config.task)

    def fit(self, train: list, dev: list | None = None, **options) -> dict:
        """Fine-tune on labelled examples (of the task's kind: ``Sentence``, ``CharTaggedSentence``
        or ``LabelledText``); ``options`` are :class:`~entangle.training.TrainingConfig` fields
        (``output_dir`` is required). Afterwards this tagger holds the best-on-dev model, on the
        device training ran on (the GPU when there is one, as Accelerate chooses)."""
        if not isinstance(self.model, torch.nn.Module):
            raise TypeError("an ONNX model is for inference only; fine-tune the PyTorch model it was exported from")
        summary = run_training(self, train, dev, TrainingConfig(**options))
        device = self.model.device  # where training left it
        best = Path(options["output_dir"]) / BEST_DIR
        if best.is_dir():
            self.model = model_class(self.model.config.task).from_pretrained(best).to(device)
        return summary

    def evaluate(self, examples: list, what: str = "evaluation data",
                 accelerator: Accelerator | None = None, return_predictions: bool = False):
        """``{side: metrics}`` for every trained side (one forward pass serves both); with an
        ``accelerator`` of several processes, each scores a share and all get the same metrics.
        ``return_predictions`` adds the predicted labels (``{side: per example, per unit}``) as a
        second value."""
        metrics, predicted = self.evaluate_decodings(examples, (self.decoding,), what, accelerator)[self.decoding]
        return (metrics, predicted) if return_predictions else metrics

    def evaluate_decodings(self, examples: list, decodings: tuple[str, ...], what: str = "evaluation data",
                           accelerator: Accelerator | None = None) -> dict[str, tuple[dict, dict]]:
        """``{decoding: (metrics, predicted labels)}``: one forward pass, its probabilities decoded
        each way named (e.g. ``("constrained", "argmax")``, to see what the label grammar changes)."""
        self.task.check_labels(examples, self.labels, what)
        probabilities = self.probabilities([example.words for example in examples], accelerator=accelerator)
        scored = {}
        for decoding in decodings:
            predicted = {side: [self.task.decode(p, self.labels, decoding)[0] for p in per_example]
                         for side, per_example in probabilities.items()}
            scored[decoding] = ({side: self.task.score(examples, labels) for side, labels in predicted.items()},
                                predicted)
        return scored

    def _decode(self, probabilities: torch.Tensor) -> tuple[list[str], list[float]]:
        return self.task.decode(probabilities, self.labels, self.decoding)

    def save_pretrained(self, path: str | Path) -> None:
        if Path(path).exists() and not Path(path).is_dir():  # transformers would only log it and save nothing
            raise FileExistsError(f"{path}: a file; save the model to a directory")
        self.model.save_pretrained(path)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(path)

    @property
    def labels(self) -> list[str]:
        return [self.model.config.id2label[i] for i in range(self.model.config.num_labels)]

    def probabilities(self, sentences: list[list[str]], sides: tuple[str, ...] | None = None,
                      accelerator: Accelerator | None = None) -> dict[str, list[torch.Tensor]]:
        """Per side, per sentence: a (n_units, n_labels) tensor of label probabilities (units:
        words, characters, or the one text).

        Each unit's row comes from the one window that owns it, so every unit gets exactly one; a
        text's row is the mean of its windows' rows, weighted by the words each owns. Under
        several processes (``accelerator``), each process runs every n-th window and the owned
        rows are gathered, so no window is dropped or counted twice.
        """
        if isinstance(sides, str):
            raise TypeError(f"sides is a tuple of side names, e.g. ({sides!r},), got the string {sides!r}")
        return self._probabilities(check_sentences(sentences), sides, accelerator)

    def _probabilities(self, sentences: list[list[str]], sides: tuple[str, ...] | None,
                       accelerator: Accelerator | None = None) -> dict[str, list[torch.Tensor]]:
        """:meth:`probabilities` of sentences already checked (by the public method that took them)."""
        sides = tuple(dict.fromkeys(sides or self.model.config.trained_sides))  # a side named twice would count twice
        # A sentence without words has no units to label; only the others are featurized.
        nonempty = [i for i, words in enumerate(sentences) if words]
        texts = [sentences[i] for i in nonempty]
        if accelerator is not None and accelerator.num_processes > 1:
            windows = self.featurizer.featurize(texts)[accelerator.process_index :: accelerator.num_processes]
            owned = self._owned_rows(inference_batches(windows, self.batch_size, self.collator), sides)
            # Each row's own copy: a view pickles its batch's whole storage (the batch sent once a row).
            rows = gather_object([(*row[:3], {side: p.clone() for side, p in row[3].items()}) for row in owned])
        else:
            rows = self._owned_rows(featurized_batches(texts, self.featurizer, self.collator, self.batch_size,
                                                       self.featurize_workers), sides)
        n_labels = self.model.config.num_labels
        out = {side: [torch.zeros(self.task.units(words) if words else 0, n_labels) for words in sentences]
               for side in sides}
        weights = [0] * len(sentences)
        for window_sentence, (start, end), weight, per_side in rows:
            sentence = nonempty[window_sentence]
            weights[sentence] += weight
            for side in sides:
                out[side][sentence][start:end] += per_side[side] * weight if self.task.unit == "text" else per_side[side]
        if self.task.unit == "text":
            for side in sides:
                for sentence, total in enumerate(weights):
                    if total:  # an empty text has no row
                        out[side][sentence] /= total
        return out

    @torch.inference_mode()
    def _owned_rows(self, batches: Iterable[tuple[list[Window], dict[str, torch.Tensor]]],
                    sides: tuple[str, ...]) -> list[tuple[int, tuple[int, int], int, dict]]:
        """``(sentence, its units covered, words owned, {side: (n_owned, n_labels) probabilities})`` per window."""
        was_training = self.model.training
        self.model.eval()
        device = self.model.device
        forward = self._inference_forward()
        dtype = AUTOCAST_DTYPES[self.autocast]
        # On a GPU the batches are copied without waiting (batch_to_device), and a batch's
        # probabilities are copied back only once later batches are queued (a copy back waits for
        # the GPU), so the processor collates while the GPU computes; at most QUEUED_BATCHES wait.
        queued: deque = deque()
        rows = []

        def collect(chunk: list[Window], probs: dict[str, torch.Tensor]) -> None:
            probs = {side: p.cpu() for side, p in probs.items()}
            for row, window in enumerate(chunk):
                first, last = window.own_rows
                rows.append((window.sentence, window.own_units, window.own_end - window.own_start,
                             {side: probs[side][row, first:last] for side in sides}))

        try:
            for chunk, batch in batches:
                inputs = batch_to_device(batch, device)
                with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None), attention_kernels(device):
                    result = forward(**inputs, sides=sides)
                probs = {}
                for side in sides:
                    logits = getattr(result, f"{side}_logits").float()
                    probs[side] = (logits.unsqueeze(1) if logits.dim() == 2 else logits).softmax(-1)  # (batch, n_units, n_labels)
                queued.append((chunk, probs))
                if len(queued) > QUEUED_BATCHES:
                    collect(*queued.popleft())
            while queued:
                collect(*queued.popleft())
        finally:  # a model in training (Tagger.fit's dev evaluation) stays so when a batch fails
            self.model.train(was_training)
        return rows

    def _inference_forward(self):
        """The model, or with ``compile`` its compiled form (compiled again only if ``fit`` replaced the model)."""
        if not self.compile:
            return self.model
        if self._compiled is None or self._compiled._orig_mod is not self.model:
            self._compiled = torch.compile(self.model, dynamic=True)
        return self._compiled

    def check_side(self, side: str | None) -> None:
        """Raise the :class:`UsageError` that :meth:`predict` would raise for ``side`` (``None``: the
        model's own), before anything is predicted."""
        self._side(side, self.task.unit)

    def _side(self, side: str | None, unit: str) -> str:
        side = side or self.model.config.predict_side
        if self.task.unit != unit:
            raise UsageError(f"this model was trained for {self.task.name} ({self.task.description}); "
                             f"use {_METHOD_FOR_UNIT[self.task.unit]}")
        if side not in self.model.config.trained_sides:
            raise UsageError(f"this model has no {side!r} head (its heads: {', '.join(self.model.config.trained_sides)})")
        if side != "joint" and side not in self.task.sides:
            raise UsageError(f"{self.task.name} is predicted from the {' or '.join(self.task.sides)} side, not {side!r}")
        return side

    def predict(self, sentences: list[list[str]], side: str | None = None, texts: list[str] | None = None) -> list:
        """What the model's task predicts for each sentence, in order (a :class:`TaggedSentence`,
        :class:`TaggedCharacters` or :class:`ClassifiedText`, each with ``to_json``/``to_conll``).
        A classifier is shown ``texts`` (default: the words joined by spaces); one without words
        gets an empty result."""
        unit = self.task.unit
        if unit == "word":
            return self.tag(sentences, side)
        if unit == "char":
            return self.tag_chars(sentences, side)
        sentences = check_sentences(sentences)
        texts = [" ".join(words) for words in sentences] if texts is None else _check_texts(texts)
        if len(texts) != len(sentences):
            raise ValueError(f"{len(texts)} texts for {len(sentences)} sentences: give one text per sentence")
        nonempty = [i for i, words in enumerate(sentences) if words]
        # The given words, not the texts split again: the model reads what evaluate and probabilities read.
        classified = dict(zip(nonempty, self._classify([sentences[i] for i in nonempty], [texts[i] for i in nonempty],
                                                       side)))
        return [classified.get(i, ClassifiedText(text, None, None, {})) for i, text in enumerate(texts)]

    def predict_stream(self, sentences: Iterable[list[str]], side: str | None = None,
                       texts: Iterable[str] | None = None) -> Iterator:
        """``predict`` for an input of any length: the predictions come out in order as each chunk of
        ``STREAM_BATCHES`` batches' sentences is done, and memory holds one chunk's features and
        probabilities, not the whole input's. ``sentences`` (and ``texts``) are read lazily."""
        if isinstance(texts, str):
            raise TypeError(f"texts: expected a list of strings, got {texts!r:.80}")
        sentences = iter(sentences)
        texts = iter(texts) if texts is not None else None
        done = 0  # sentences so far, to count the whole input in a mismatch
        while chunk := list(islice(sentences, STREAM_BATCHES * self.batch_size)):
            chunk_texts = list(islice(texts, len(chunk))) if texts is not None else None
            if chunk_texts is not None and len(chunk_texts) < len(chunk):
                raise ValueError(f"the texts ran out at sentence {done + len(chunk_texts)}: give one text per sentence")
            yield from self.predict(chunk, side, chunk_texts)
            done += len(chunk)
        if texts is not None and next(texts, None) is not None:
            raise ValueError(f"more texts than the {done} sentences: give one text per sentence")

    def tag(self, sentences: list[list[str]], side: str | None = None) -> list[TaggedSentence]:
        """Label every word of pre-split sentences from ``side`` (default: the model's prediction side)."""
        side = self._side(side, "word")
        sentences = check_sentences(sentences)
        probs = self._probabilities(sentences, (side,))[side]
        return [TaggedSentence(words, *self._decode(p)) for words, p in zip(sentences, probs)]

    def tag_text(self, texts: list[str], side: str | None = None) -> list[TaggedSentence]:
        """Label raw strings: each is split into words with :func:`split_words` first."""
        return self.tag([split_words(text) for text in _check_texts(texts)], side)

    def tag_chars(self, sentences: list[list[str]], side: str | None = None) -> list[TaggedCharacters]:
        """A label for every character of every word (a character-level task's model)."""
        side = self._side(side or "char", "char")
        sentences = check_sentences(sentences)
        tagged = []
        for words, p in zip(sentences, self._probabilities(sentences, (side,))[side]):
            labels, best = self._decode(p)
            tagged.append(TaggedCharacters(words, split_by_words(words, labels), split_by_words(words, best)))
        return tagged

    def classify(self, texts: list[str], side: str | None = None) -> list[ClassifiedText]:
        """The class of each raw text (split into words with :func:`split_words`); a text longer
        than the encoders' windows is classified from all its windows (their mean probabilities)."""
        texts = _check_texts(texts)
        words = [split_words(text) for text in texts]
        for number, (text, split) in enumerate(zip(texts, words)):
            if not split:
                raise ValueError(f"text {number} has no words to classify ({text!r})")
        return self._classify(words, texts, side)

    def _classify(self, sentences: list[list[str]], texts: list[str], side: str | None) -> list[ClassifiedText]:
        """The class of each sentence's words, shown with its text."""
        side = self._side(side, "text")
        labels = self.labels
        results = []
        for text, p in zip(texts, self._probabilities(sentences, (side,))[side]):
            distribution = p[0]
            best = int(distribution.argmax())
            results.append(ClassifiedText(text, labels[best], float(distribution[best]),
                                          dict(zip(labels, distribution.tolist()))))
        return results


_METHOD_FOR_UNIT = {"word": "Tagger.tag", "char": "Tagger.tag_chars", "text": "Tagger.classify"}
