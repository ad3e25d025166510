"""CharBERT-style fusion of characters and subwords (Ma et al. 2020, "CharBERT: Character-aware
Pre-trained Language Model", COLING), a baseline beside the entanglement model's co-attention.

A character channel runs beside the subword channel, position for position. A bidirectional GRU
reads the window's characters; a subword's character vector is the GRU's states at its first
and last character, concatenated and projected to the subword encoder's width. Both channels
pass through the *same* transformer layers (the subword encoder's, shared weights). After every
layer a heterogeneous interaction module *fuses* the channels (a linear map per channel,
concatenation, a convolution over positions) and *divides* them again (a feed-forward per
channel, residual, layer norm). The tagging head reads both channels, concatenated.

Departures from the paper, each because this is a fine-tuning baseline without CharBERT's own
pretraining:
- no NLM (noisy language model) pretraining: the character channel and the interaction modules
  start random and learn during fine-tuning (with the new layers' learning rate);
- characters are embedded by hashing code points like the built-in character encoder, so every
  script works without a character vocabulary;
- the character vectors are layer-normalised before the first layer, whose inputs in the
  encoder's pretraining were layer-normalised embeddings.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers import AutoModel
from transformers.masking_utils import create_bidirectional_mask

from .base import EntangleModelOutput, EntanglePreTrainedModel
from .char_encoder import hash_code_points
from .configuration import EntangleConfig
from .rnn import UnflattenedGRU, separate_weights_expected

#: Hash functions of the character embeddings (each its own table, summed), as the built-in
#: character encoder's default.
CHAR_HASH_FUNCTIONS = 2


def _at(states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """(batch, n, width) at (batch, m) positions -> (batch, m, width)."""
    return states.gather(1, positions.unsqueeze(-1).expand(-1, -1, states.shape[-1]))


class SubwordCharacters(nn.Module):
    """Code points ``(batch, n_chars)`` -> one vector per subword ``(batch, n_subwords, hidden)``
    from the BiGRU states at its first and last character."""

    def __init__(self, config: EntangleConfig):
        super().__init__()
        self.num_buckets = config.char_hash_buckets
        self.embeddings = nn.ModuleList(
            nn.Embedding(config.char_hash_buckets, config.char_embedding_size) for _ in range(CHAR_HASH_FUNCTIONS)
        )
        self.gru = UnflattenedGRU(config.char_embedding_size, config.char_gru_size, batch_first=True, bidirectional=True)
        self.projection = nn.Linear(4 * config.char_gru_size, config.hidden_size)  # [first; last] x 2 directions
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, char_ids: torch.Tensor, char_mask: torch.Tensor, starts: torch.Tensor,
                ends: torch.Tensor) -> torch.Tensor:
        embedded = sum(table(hash_code_points(char_ids, k, self.num_buckets)) for k, table in enumerate(self.embeddings))
        # Packed, so the backward direction never reads padding (padding invariance).
        lengths = char_mask.sum(dim=1).clamp(min=1).cpu()
        packed = pack_padded_sequence(self.dropout(embedded), lengths, batch_first=True, enforce_sorted=False)
        with separate_weights_expected(char_ids.is_cuda):
            states, _ = pad_packed_sequence(self.gru(packed)[0], batch_first=True, total_length=char_ids.shape[1])
        # states: (batch, n_chars, 2 * gru)
        ends_of_subwords = torch.cat([_at(states, starts), _at(states, ends)], dim=-1)
        return self.dropout(self.layer_norm(self.projection(ends_of_subwords)))  # (batch, n_subwords, hidden)


class HeterogeneousInteraction(nn.Module):
    """After a layer: fuse the two channels, then divide the fused states back into each."""

    def __init__(self, config: EntangleConfig):
        super().__init__()
        width, kernel = config.hidden_size, config.fusion_kernel_size
        self.subword_in = nn.Linear(width, width)
        self.char_in = nn.Linear(width, width)
        self.fuse = nn.Conv1d(2 * width, width, kernel, padding=kernel // 2)
        self.subword_out = nn.Linear(width, width)
        self.char_out = nn.Linear(width, width)
        self.subword_norm = nn.LayerNorm(width, eps=config.layer_norm_eps)
        self.char_norm = nn.LayerNorm(width, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, subwords: torch.Tensor, chars: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        both = torch.cat([self.subword_in(subwords), self.char_in(chars)], dim=-1)  # (batch, n, 2 * hidden)
        # Padded positions are zeroed, which is what the convolution's own zero padding reads past
        # a sequence's end: a sentence's states do not depend on the batch's longest sentence.
        both = both * mask.unsqueeze(-1).to(both.dtype)
        fused = F.gelu(self.fuse(both.transpose(1, 2)).transpose(1, 2))  # (batch, n, hidden)
        subwords = self.subword_norm(subwords + self.dropout(F.gelu(self.subword_out(fused))))
        chars = self.char_norm(chars + self.dropout(F.gelu(self.char_out(fused))))
        return subwords, chars


class CharBertModel(EntanglePreTrainedModel):
    """Subword ids, code points and each subword's character span -> both channels' final states,
    concatenated: ``subword_states`` of width 2 x hidden (``char_states`` is ``None``)."""

    def __init__(self, config: EntangleConfig):
        super().__init__(config)
        self.subword_encoder = AutoModel.from_config(config.subword_config)
        self.char_channel = SubwordCharacters(config)
        self.interactions = nn.ModuleList(
            HeterogeneousInteraction(config) for _ in range(config.subword_config.num_hidden_layers)
        )
        self.post_init()

    def forward(
        self,
        char_ids: torch.Tensor,
        char_mask: torch.Tensor,
        subword_ids: torch.Tensor,
        subword_mask: torch.Tensor,
        subword_char_starts: torch.Tensor,
        subword_char_ends: torch.Tensor,
    ) -> EntangleModelOutput:
        """``subword_char_starts``/``_ends`` (batch, n_subwords): each subword's first and last
        character in ``char_ids``."""
        encoder = self.subword_encoder
        subwords = encoder.embeddings(input_ids=subword_ids)  # (batch, n_subwords, hidden)
        chars = self.char_channel(char_ids, char_mask, subword_char_starts, subword_char_ends)  # (batch, n_subwords, hidden)
        # Both channels go through each layer in one call: the same weights, twice the batch.
        both = torch.cat([subwords, chars])  # (2 x batch, n_subwords, hidden)
        # Positional: the second argument is named inputs_embeds from transformers 5.2, input_embeds before.
        attention_mask = create_bidirectional_mask(encoder.config, both, subword_mask.repeat(2, 1))
        for layer, interaction in zip(encoder.encoder.layer, self.interactions):
            subwords, chars = interaction(*layer(both, attention_mask).chunk(2), subword_mask)
            both = torch.cat([subwords, chars])
        return EntangleModelOutput(subword_states=torch.cat([subwords, chars], dim=-1))  # (batch, n_subwords, 2 x hidden)
