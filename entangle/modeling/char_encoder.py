"""The built-in character encoder: hashed code-point embeddings and a BiLSTM.

It exists for machines where no pretrained character model (CANINE) can be loaded. It is a
regular Hugging Face model (config + ``save_pretrained``/``from_pretrained``, registered with
the Auto classes), so a trained or pretrained copy can be passed as ``--char PATH`` like any
hub model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from ..options import BUILTIN_CHAR_MODEL_TYPE
from .rnn import UnflattenedLSTM, separate_weights_expected

# Odd multipliers for the hash functions. Hashing code points (as CANINE does) means the encoder
# needs no vocabulary file and accepts every Unicode script; collisions are resolved by using
# several hash functions and summing their embeddings.
_HASH_MULTIPLIERS = (31, 43, 59, 61, 73, 97, 103, 113)
MAX_HASH_FUNCTIONS = len(_HASH_MULTIPLIERS)


def hash_code_points(code_points: torch.Tensor, k: int, buckets: int) -> torch.Tensor:
    """Bucket of each code point under hash function ``k``."""
    return (code_points * _HASH_MULTIPLIERS[k] + k) % buckets


class CharEncoderConfig(PreTrainedConfig):
    r"""
    Configuration of [`CharEncoderModel`].

    Args:
        hidden_size (`int`, defaults to 256):
            Width of the output states (both LSTM directions together); must be even.
        embedding_size (`int`, defaults to 128):
            Width of the hashed character embeddings.
        num_hidden_layers (`int`, defaults to 1):
            Number of stacked BiLSTM layers.
        num_hash_functions (`int`, defaults to 2):
            Number of hash functions; each has its own embedding table and the results are summed.
        num_hash_buckets (`int`, defaults to 8192):
            Rows of each embedding table.
        hidden_dropout_prob (`float`, defaults to 0.1):
            Dropout on the embeddings and between LSTM layers.
        max_position_embeddings (`int`, defaults to 2048):
            The longest character window (start/end markers included) the featurizer builds for
            this encoder. An LSTM has no hard limit; this bounds memory and matches CANINE.
        initializer_range (`float`, defaults to 0.02):
            Standard deviation of the embedding initialisation.
    """

    model_type = BUILTIN_CHAR_MODEL_TYPE
    # Its own __init__ (not a dataclass) and __eq__, for every transformers 5 release: see EntangleConfig.
    __eq__ = PreTrainedConfig.__eq__

    def __init__(
        self,
        *,
        hidden_size: int = 256,
        embedding_size: int = 128,
        num_hidden_layers: int = 1,
        num_hash_functions: int = 2,
        num_hash_buckets: int = 8192,
        hidden_dropout_prob: float = 0.1,
        max_position_embeddings: int = 2048,
        initializer_range: float = 0.02,
        pad_token_id: int | None = 0,
        **kwargs,
    ):
        self.hidden_size = hidden_size
        self.embedding_size = embedding_size
        self.num_hidden_layers = num_hidden_layers
        self.num_hash_functions = num_hash_functions
        self.num_hash_buckets = num_hash_buckets
        self.hidden_dropout_prob = hidden_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.initializer_range = initializer_range
        self.pad_token_id = pad_token_id
        super().__init__(**kwargs)
        if self.hidden_size % 2:
            raise ValueError(f"hidden_size must be even (two LSTM directions), got {self.hidden_size}")
        if not 1 <= self.num_hash_functions <= MAX_HASH_FUNCTIONS:
            raise ValueError(f"num_hash_functions must be in 1..{MAX_HASH_FUNCTIONS}")
        for name in ("hidden_size", "embedding_size", "num_hidden_layers", "num_hash_buckets", "max_position_embeddings"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


class CharEncoderModel(PreTrainedModel):
    """Code points ``(batch, n_chars)`` -> contextual character states ``(batch, n_chars, hidden)``."""

    config_class = CharEncoderConfig
    base_model_prefix = "char_encoder"
    main_input_name = "input_ids"

    def __init__(self, config: CharEncoderConfig):
        super().__init__(config)
        self.embeddings = nn.ModuleList(
            nn.Embedding(config.num_hash_buckets, config.embedding_size) for _ in range(config.num_hash_functions)
        )
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.lstm = UnflattenedLSTM(
            config.embedding_size,
            config.hidden_size // 2,
            num_layers=config.num_hidden_layers,
            dropout=config.hidden_dropout_prob if config.num_hidden_layers > 1 else 0.0,
            bidirectional=True,
            batch_first=True,
        )
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=self.config.initializer_range)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        buckets = self.config.num_hash_buckets
        return sum(table(hash_code_points(input_ids, k, buckets)) for k, table in enumerate(self.embeddings))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        **kwargs,
    ) -> BaseModelOutput:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        x = self.dropout(self.embed(input_ids))  # (batch, n_chars, embedding)
        # Each direction runs forward over the sentence (the backward one over its characters
        # reversed within the sentence's length), so padding comes after every real character in
        # both: a sentence's states do not depend on the other sentences in its batch. Unlike
        # packing, this exports to ONNX; the weights are nn.LSTM's, so checkpoints are unchanged.
        lengths = attention_mask.sum(dim=1, keepdim=True).clamp(min=1)  # (batch, 1)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        reverse = torch.where(positions < lengths, lengths - 1 - positions, positions)  # (batch, n_chars)
        for layer in range(self.config.num_hidden_layers):
            if layer:
                x = F.dropout(x, self.lstm.dropout, self.training)
            forward = self._direction(x, layer, "")
            backward = _take(self._direction(_take(x, reverse), layer, "_reverse"), reverse)
            x = torch.cat([forward, backward], dim=-1)  # (batch, n_chars, hidden)
        states = x.masked_fill(positions.unsqueeze(-1) >= lengths.unsqueeze(-1), 0.0)  # padding rows zero, as packing gave
        return BaseModelOutput(last_hidden_state=states)

    def _direction(self, x: torch.Tensor, layer: int, suffix: str) -> torch.Tensor:
        """One direction of one layer of ``self.lstm``, run left to right."""
        weights = [getattr(self.lstm, f"{name}_l{layer}{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        state = x.new_zeros(1, x.shape[0], self.lstm.hidden_size)
        # Outside autocast: oneDNN has no fp16 LSTM on CPU, and the LSTM is ~2% of the model's time.
        with torch.autocast(x.device.type, enabled=False), separate_weights_expected(x.is_cuda):
            out, _, _ = torch.lstm(x, (state, state), weights, True, 1, 0.0, self.training, False, True)
        return out  # (batch, n_chars, hidden / 2)


def _take(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x`` (batch, n, dim) reordered along ``n`` by ``index`` (batch, n)."""
    return x.gather(1, index.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
