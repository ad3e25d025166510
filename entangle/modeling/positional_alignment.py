"""Positional alignment (one of the paper's two proposed extensions): before the co-attention,
each character position is told which subword it belongs to, and each subword its character span.

Co-attention otherwise has to discover from content alone which characters spell which subword.
Both sides are told in two shared coordinate systems, so that a query and a key can match on them
(a dot product can only compare positions embedded by the same table):

    character p:  + S[subword of p]  + C[p]
    subword j:    + S[j]             + (C[first character of j] + C[last character of j]) / 2

S has a row per subword position and one more for characters outside every subword (the spaces
between words); C has a row per character position. Both are learned and start small (as BERT's
position embeddings), so a model starts close to the one without them.
"""

from __future__ import annotations

import torch
from torch import nn


class PositionalAlignment(nn.Module):
    def __init__(self, hidden_size: int, max_chars: int, max_subwords: int, initializer_range: float):
        super().__init__()
        self.outside = max_subwords  # S's row for a character in no subword
        self.subword_position = nn.Embedding(max_subwords + 1, hidden_size)
        self.char_position = nn.Embedding(max_chars, hidden_size)
        for table in (self.subword_position, self.char_position):
            nn.init.normal_(table.weight, std=initializer_range)

    def forward(self, char_states: torch.Tensor, subword_states: torch.Tensor, subword_mask: torch.Tensor,
                subword_char_starts: torch.Tensor, subword_char_ends: torch.Tensor,
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """``char_states`` (batch, n_chars, hidden), ``subword_states`` (batch, n_subwords, hidden);
        ``subword_char_starts``/``_ends`` (batch, n_subwords): each subword's first and last character
        (padding subwords, ``subword_mask`` False, belong to no character). Both states, told."""
        chars = torch.arange(char_states.shape[1], device=char_states.device)
        subwords = torch.arange(subword_states.shape[1], device=subword_states.device)
        owner = char_owners(chars.numel(), subword_char_starts, subword_char_ends, subword_mask, self.outside)
        char_states = char_states + self.subword_position(owner) + self.char_position(chars)
        span = (self.char_position(subword_char_starts) + self.char_position(subword_char_ends)) / 2
        subword_states = subword_states + self.subword_position(subwords) + span
        return char_states, subword_states


def char_owners(n_chars: int, subword_char_starts: torch.Tensor, subword_char_ends: torch.Tensor,
                subword_mask: torch.Tensor, outside: int) -> torch.Tensor:
    """(batch, n_chars): the position of the first subword whose span holds each character (a clipped
    word's extra subwords all end on its last character), ``outside`` for a character in none (the
    spaces between words)."""
    inside = char_subword_alignment(n_chars, subword_char_starts, subword_char_ends, subword_mask)
    return torch.where(inside.any(-1), inside.int().argmax(-1), outside)


def char_subword_alignment(n_chars: int, subword_char_starts: torch.Tensor, subword_char_ends: torch.Tensor,
                           subword_mask: torch.Tensor, stride: int = 1) -> torch.Tensor:
    """(batch, n_chars, n_subwords): True where character p lies in subword j's span (padding
    subwords hold none). With ``stride`` K, p is a position of the K-fold shortened sequence
    (``--char-downsample``), characters pK to pK + K - 1: True where any of them lies in the span."""
    first = torch.arange(n_chars, device=subword_char_starts.device) * stride
    return ((subword_char_starts[:, None, :] <= first[None, :, None] + stride - 1)
            & (first[None, :, None] <= subword_char_ends[:, None, :]) & subword_mask[:, None, :].bool())
