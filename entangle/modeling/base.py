"""What the entanglement model and the CharBERT-style model share: the base class that initialises
the layers they add, and the output of a base model (the final states of each side)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.utils import ModelOutput

from .coattention import ALIGNMENT_BIAS_INIT, TransformerBlock
from .configuration import EntangleConfig


@dataclass
class EntangleModelOutput(ModelOutput):
    """Final states of each side, ``None`` for a side the model does not run."""

    char_states: torch.Tensor | None = None  # (batch, n_chars, hidden)
    subword_states: torch.Tensor | None = None  # (batch, n_subwords, hidden)


class EntanglePreTrainedModel(PreTrainedModel):
    config_class = EntangleConfig
    base_model_prefix = "entangle"
    main_input_name = "subword_ids"

    def _init_weights(self, module: nn.Module) -> None:
        # The encoders are PreTrainedModels and initialise themselves; this covers our own layers.
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=self.config.initializer_range)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, TransformerBlock) and module.alignment_bias is not None:
            nn.init.constant_(module.alignment_bias, ALIGNMENT_BIAS_INIT)
