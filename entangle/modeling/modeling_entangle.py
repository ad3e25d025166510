"""The entanglement model: two encoders, width projections, co-attention, heads.

Reads bottom-up: the base model (encoders -> projection -> co-attention) and then the heads
(per word or character, or per text), which compute their own loss when labels are given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn
from transformers import AutoModel, PreTrainedModel, PreTrainedTokenizerBase
from transformers.utils import ModelOutput

from ..options import DEFAULT_COATTENTION_LAYERS, PRETRAINED_SHAPE, ConfigError
from .base import EntangleModelOutput, EntanglePreTrainedModel
from .charbert import CharBertModel
from .configuration import EntangleConfig, encoders_needed
from .coattention import CoAttentionStack
from .downsampling import CharDownsampling
from .encoders import encode_chars, load_char_encoder, load_subword_encoder, window_limits
from .loading import local_dir, read_config, reading_weights, weights_file
from .positional_alignment import PositionalAlignment, char_subword_alignment


@dataclass
class EntangleTaggerOutput(ModelOutput):
    """Logits of each trained side; ``logits`` is the prediction side's."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None  # (batch, n_units, n_labels), or (batch, n_labels) for a text task
    subword_logits: torch.Tensor | None = None
    char_logits: torch.Tensor | None = None
    joint_logits: torch.Tensor | None = None  # the head that reads both sides


def _projection(width: int, target: int) -> nn.Module:
    # The paper needed this for XLM-R large (1024) against CANINE (768); equal widths pass through.
    return nn.Identity() if width == target else nn.Linear(width, target)


class EntangleModel(EntanglePreTrainedModel):
    """Character ids and subword ids -> co-attended character and subword states."""

    def __init__(self, config: EntangleConfig):
        super().__init__(config)
        self.char_encoder = AutoModel.from_config(config.char_config) if config.uses_char else None
        self.subword_encoder = AutoModel.from_config(config.subword_config) if config.uses_subword else None
        self.char_projection = _projection(config.char_config.hidden_size, config.hidden_size) if config.uses_char else None
        self.subword_projection = (
            _projection(config.subword_config.hidden_size, config.hidden_size) if config.uses_subword else None
        )
        self.coattention = CoAttentionStack(
            config.num_coattention_layers,
            isolate_sides=config.isolate_sides,
            hidden_size=config.hidden_size,
            num_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            dropout=config.hidden_dropout_prob,
            attention_dropout=config.attention_probs_dropout_prob,
            layer_norm_eps=config.layer_norm_eps,
            alignment_bias=config.alignment_bias,
        )
        self.positional_alignment = (
            PositionalAlignment(config.hidden_size, config.max_chars, config.max_subwords, config.initializer_range)
            if config.positional_alignment else None)
        self.char_downsampling = (CharDownsampling(config.hidden_size, config.char_downsample, config.layer_norm_eps)
                                  if config.char_downsample > 1 else None)
        self.post_init()

    def forward(
        self,
        char_ids: torch.Tensor | None = None,
        char_mask: torch.Tensor | None = None,
        subword_ids: torch.Tensor | None = None,
        subword_mask: torch.Tensor | None = None,
        sides: tuple[str, ...] = ("char", "subword"),
        subword_char_starts: torch.Tensor | None = None,
        subword_char_ends: torch.Tensor | None = None,
    ) -> EntangleModelOutput:
        """``sides``: the sides whose final states are needed (with co-attention, the other side's
        last module is skipped and its states are ``None``). ``subword_char_*`` (positional
        alignment and alignment bias only): each subword's first and last character."""
        char_states = subword_states = None
        if self.char_encoder is not None:
            char_states = self.char_projection(encode_chars(self.char_encoder, char_ids, char_mask))  # (batch, n_chars, hidden)
        if self.subword_encoder is not None:
            encoded = self.subword_encoder(input_ids=subword_ids, attention_mask=subword_mask).last_hidden_state
            subword_states = self.subword_projection(encoded)  # (batch, n_subwords, hidden)
        if self.positional_alignment is not None:
            char_states, subword_states = self.positional_alignment(char_states, subword_states, subword_mask,
                                                                    subword_char_starts, subword_char_ends)
        if self.config.num_coattention_layers:
            full, coattention_char_mask = char_states, char_mask
            if self.char_downsampling is not None:
                char_states, coattention_char_mask = self.char_downsampling.down(char_states, char_mask)
            alignment = (char_subword_alignment(char_states.shape[1], subword_char_starts, subword_char_ends,
                                                subword_mask, self.config.char_downsample)
                         if self.config.alignment_bias else None)
            char_states, subword_states = self.coattention(char_states, coattention_char_mask, subword_states,
                                                           subword_mask, sides, alignment)
            if self.char_downsampling is not None and char_states is not None:
                char_states = self.char_downsampling.up(char_states, full)
        return EntangleModelOutput(char_states=char_states, subword_states=subword_states)


#: What ``coattention_init`` takes from a pretrained base model: what sits between the encoders and
#: the heads (positional alignment, never pretrained, starts fresh).
PRETRAINED_PARTS = ("char_projection", "subword_projection", "coattention", "char_downsampling")


def load_pretrained_parts(model: EntangleModel, directory: str | Path) -> None:
    """Copy the projections and co-attention of the model saved in ``directory`` (by ``entangle
    pretrain-coattention``, or any entangle model built the same way) into ``model``; a
    :class:`ConfigError` when the two were built differently."""
    directory = local_dir(directory)
    saved = read_config(directory, "a model written by entangle pretrain-coattention")
    if saved.get("model_type") != EntangleConfig.model_type:
        raise ConfigError(f"{directory}: the config of a {saved.get('model_type')!r} model, not of an entangle model "
                          "(--coattention-init takes the output of entangle pretrain-coattention)")
    different = [f"{key} {saved.get(key)!r} there, {getattr(model.config, key)!r} here" for key in PRETRAINED_SHAPE
                 if saved.get(key, EntangleConfig.__init__.__kwdefaults__.get(key)) != getattr(model.config, key)]
    if different:
        raise ConfigError(f"{directory}: its co-attention was pretrained for another model ({'; '.join(different)}); "
                          "give the same encoders and co-attention options")
    file = weights_file(directory)
    if file.suffix != ".safetensors":
        raise ConfigError(f"{file}: --coattention-init reads safetensors weights (save the model with safetensors)")
    with reading_weights(file):
        weights = load_file(file)
    # A base model's keys start with the part; a model with heads keeps its base model under "entangle.".
    weights = {key.removeprefix(f"{EntanglePreTrainedModel.base_model_prefix}."): value for key, value in weights.items()}
    for part, side in (("char_encoder", "character"), ("subword_encoder", "subword")):
        # A base model's encoders (fixed in pretrain-coattention) by their weights: a name says nothing
        # of a directory written again since (pretrain-char rewrites its output at every checkpoint).
        # A trained model's were fine-tuned with it: they differ by design.
        if saved.get("architectures") != [EntangleModel.__name__]:
            break
        module, prefix = getattr(model, part), f"{part}."
        kept = {key[len(prefix):]: value for key, value in weights.items() if key.startswith(prefix)}
        if module is not None and kept:
            own = module.state_dict()
            if kept.keys() != own.keys() or any(kept[key].shape != own[key].shape
                                                or not torch.equal(kept[key].to(own[key].device, own[key].dtype), own[key])
                                                for key in own):
                name = getattr(model.config, f"{part}_name")
                raise ConfigError(f"{directory}: its co-attention was pretrained on another {side} encoder (the "
                                  f"weights differ from {f'those {name} holds now' if name else 'this model’s'}): "
                                  "pretrain it again on this one")
    for part in PRETRAINED_PARTS:
        module = getattr(model, part)
        if module is not None:
            prefix = f"{part}."
            own = {key[len(prefix):]: value for key, value in weights.items() if key.startswith(prefix)}
            if own.keys() != module.state_dict().keys():
                raise ConfigError(f"{file}: no complete {part} in it (found {len(own)} of its "
                                  f"{len(module.state_dict())} tensors)")
            module.load_state_dict(own)


def _gather_words(states: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """(batch, n_positions, hidden) at (batch, n_words) start positions -> (batch, n_words, hidden)."""
    return states.gather(1, starts.unsqueeze(-1).expand(-1, -1, states.shape[-1]))


class _EntangleWithHeads(EntanglePreTrainedModel):
    """The base model and a head per trained side; subclasses say where a head reads its side's
    states and what the head is.

    The base model is the entanglement model, or with ``config.fusion == "charbert"`` the
    CharBERT-style model, whose subword states are both channels concatenated (2 x hidden).
    """

    def __init__(self, config: EntangleConfig):
        super().__init__(config)
        if config.fusion == "charbert":
            self.entangle = CharBertModel(config)
        else:
            self.entangle = EntangleModel(config)
        widths = {"subword": config.hidden_size * (2 if config.fusion == "charbert" else 1), "char": config.hidden_size}
        widths["joint"] = widths["subword"] + widths["char"]  # a unit's subword-side and character-side states
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.classifiers = nn.ModuleDict({side: self._head(config, widths[side]) for side in config.trained_sides})
        self.post_init()

    @classmethod
    def from_encoders(
        cls,
        char: str | PreTrainedModel | None,
        subword: str | PreTrainedModel | None,
        labels: list[str],
        tokenizer: PreTrainedTokenizerBase | None = None,
        **config_kwargs,
    ) -> tuple["_EntangleWithHeads", PreTrainedTokenizerBase | None]:
        """Build a model around pretrained (or built-in) encoders.

        ``char``/``subword`` are names (hub, directory, ``builtin``, ``minilm``) or models; a
        subword model passed as an object needs its ``tokenizer``. An encoder the configuration
        does not use (``m = 0`` with one side) is not loaded. Returns the model and the subword
        tokenizer (``None`` for a character-only model).
        """
        uses_char, uses_subword = encoders_needed(
            config_kwargs.get("num_coattention_layers", DEFAULT_COATTENTION_LAYERS), config_kwargs.get("side", "both")
        )
        if not uses_char:
            char = None
        if not uses_subword:
            subword = None
        names = {"char": char if isinstance(char, str) else None, "subword": subword if isinstance(subword, str) else None}
        if isinstance(char, str):
            char = load_char_encoder(char)
        if isinstance(subword, str):
            subword, tokenizer = load_subword_encoder(subword)
        config_kwargs.setdefault("id2label", dict(enumerate(labels)))
        config_kwargs.setdefault("label2id", {label: i for i, label in enumerate(labels)})
        for side, encoder in (("char", char), ("subword", subword)):
            if encoder is not None:
                # from_pretrained records where weights came from; a model built from a config has no name.
                config_kwargs.setdefault(f"{side}_encoder_name", names[side] or encoder.name_or_path or None)
                config_kwargs.setdefault(f"{side}_encoder_pretrained", bool(encoder.name_or_path))
        if subword is None:
            tokenizer = None
        for name, limit in window_limits(char.config if char is not None else None,
                                         subword.config if subword is not None else None, tokenizer).items():
            if (config_kwargs.get(name) or 0) > limit:
                raise ConfigError(f"{name}={config_kwargs[name]} is more than this encoder takes ({limit}): "
                                  f"give --{name.replace('_', '-')} {limit} or less")
            config_kwargs.setdefault(name, limit)
        config = EntangleConfig(
            char_config=char.config.to_dict() if char is not None else None,
            subword_config=subword.config.to_dict() if subword is not None else None,
            **config_kwargs,
        )
        model = cls(config)
        # Swap the randomly initialised encoders built from the configs for the loaded ones.
        if char is not None:
            model.entangle.char_encoder = char
        if subword is not None:
            model.entangle.subword_encoder = subword
        if config.coattention_init:
            load_pretrained_parts(model.entangle, config.coattention_init)
        return model, tokenizer

    def _head(self, config: EntangleConfig, width: int) -> nn.Module:
        raise NotImplementedError

    def _read(self, states: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def forward(
        self,
        char_ids: torch.Tensor | None = None,
        char_mask: torch.Tensor | None = None,
        subword_ids: torch.Tensor | None = None,
        subword_mask: torch.Tensor | None = None,
        char_word_starts: torch.Tensor | None = None,
        subword_word_starts: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        sides: tuple[str, ...] | None = None,
        subword_char_starts: torch.Tensor | None = None,
        subword_char_ends: torch.Tensor | None = None,
        **kwargs,
    ) -> EntangleTaggerOutput:
        """``*_word_starts`` (batch, n_units) index the positions the heads read (each word's
        first subword / character, or every character for a character task); ``labels`` use
        -100 for padding and for units another window owns. ``sides`` limits the heads computed
        (default: every trained side). ``subword_char_*`` (CharBERT and positional alignment only):
        each subword's first / last character."""
        sides = tuple(sides or self.classifiers.keys())
        if not set(sides) <= set(self.classifiers):
            raise ValueError(f"this model has heads for {', '.join(self.classifiers)} only, not {', '.join(sides)}")
        needed = ("char", "subword") if "joint" in sides else sides  # the sides the heads read (joint: both)
        if self.config.fusion == "charbert":
            states = self.entangle(char_ids, char_mask, subword_ids, subword_mask, subword_char_starts, subword_char_ends)
        else:
            states = self.entangle(char_ids, char_mask, subword_ids, subword_mask, needed, subword_char_starts,
                                   subword_char_ends)
        side_inputs = {"subword": (states.subword_states, subword_word_starts), "char": (states.char_states, char_word_starts)}
        reads = {side: self._read(*side_inputs[side]) for side in needed}
        if "joint" in sides:
            # Beside the side heads when the sides are isolated: its loss trains only itself.
            joint = torch.cat([reads["subword"], reads["char"]], dim=-1)
            reads["joint"] = joint.detach() if self.config.isolate_sides else joint
        logits = {side: self.classifiers[side](self.dropout(reads[side])) for side in sides}
        loss = None
        if labels is not None:
            # Every head's loss, summed (isolated sides and a joint head beside them each train only their own part).
            loss = sum(F.cross_entropy(x.reshape(-1, x.shape[-1]), labels.flatten(), ignore_index=-100)
                       for x in logits.values())
            if self.config.char_distill and "char" in logits:
                loss = loss + self.config.char_distill * _distillation(logits["char"], logits, labels)
        return EntangleTaggerOutput(
            loss=loss,
            logits=logits.get(self.config.predict_side),
            subword_logits=logits.get("subword"),
            char_logits=logits.get("char"),
            joint_logits=logits.get("joint"),
        )


def _distillation(char_logits: torch.Tensor, logits: dict[str, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """KL divergence from the joint head's (else the subword head's) detached distribution to the
    character head's, averaged over the labelled units: it trains the character head only."""
    teacher = logits.get("joint", logits.get("subword"))
    if teacher is None:  # a forward limited to the character head (sides=("char",)) has no teacher
        return char_logits.new_zeros(())
    labelled = labels.flatten() != -100
    student, teacher = (x.reshape(-1, x.shape[-1])[labelled] for x in (char_logits, teacher.detach()))
    divergence = F.kl_div(F.log_softmax(student, dim=-1), F.log_softmax(teacher, dim=-1), log_target=True,
                          reduction="sum")
    return divergence / labelled.sum().clamp(min=1)


class EntangleForTokenClassification(_EntangleWithHeads):
    """A label per word, from its first subword (subword side) or its first character (char
    side); or a label per character, from the character side."""

    def _head(self, config: EntangleConfig, width: int) -> nn.Module:
        return nn.Linear(width, config.num_labels)

    def _read(self, states: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
        return _gather_words(states, positions)  # (batch, n_units, hidden) -> logits (batch, n_units, n_labels)


class EntangleForSequenceClassification(_EntangleWithHeads):
    """A label per text from the first position of a side (the subword encoder's ``[CLS]``-like
    token, the character side's start marker) through dense -> tanh -> linear, as BERT's pooler
    and the paper's classification head do."""

    def _head(self, config: EntangleConfig, width: int) -> nn.Module:
        return nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Dropout(config.classifier_dropout),
                             nn.Linear(width, config.num_labels))

    def _read(self, states: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
        return states[:, 0]  # (batch, hidden) -> logits (batch, n_labels)
