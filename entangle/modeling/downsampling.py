"""A shorter character sequence for the co-attention (CANINE's recipe, Clark et al. 2022).

The co-attention's cost grows with the character sequence, four to five times the subword one.
With a rate K, the character states entering the co-attention are shortened K-fold by a strided
convolution (kernel = stride = K, as CANINE's downsampling), so both sides' cross-attention and
the character side's self-attention run over n_chars / K positions. What the character heads read
is restored to one state per character: each shortened state repeated K times, concatenated with
the character encoder's own full-resolution state, projected back to the width (CANINE's
upsampling, without its final convolution and transformer layer).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CharDownsampling(nn.Module):
    def __init__(self, hidden_size: int, rate: int, layer_norm_eps: float):
        super().__init__()
        self.rate = rate
        self.shorten = nn.Conv1d(hidden_size, hidden_size, kernel_size=rate, stride=rate)
        self.short_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.restore = nn.Linear(2 * hidden_size, hidden_size)
        self.restored_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)

    def down(self, states: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(batch, n_chars, hidden) and its mask (real characters first, then padding) ->
        (batch, ceil(n_chars / K), hidden) and its mask: a short position is real when any of its
        K characters is. Padding is zeroed first, so a sequence gives the same states however much
        padding follows it. K - 1 zeros are appended whatever the length, and the short mask comes
        from each row's length: no arithmetic or pooling on the length, so an exported graph keeps it
        dynamic."""
        states = F.pad(states * mask[..., None].to(states.dtype), (0, 0, 0, self.rate - 1))
        short = self.shorten(states.transpose(1, 2)).transpose(1, 2)  # (batch, n_short, hidden)
        starts = torch.arange(short.shape[1], device=mask.device) * self.rate  # each short position's first character
        short_mask = (starts < mask.sum(dim=-1, keepdim=True)).to(mask.dtype)
        return self.short_norm(F.gelu(short)), short_mask

    def up(self, short: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
        """Co-attended short states (batch, n_short, hidden) and the full-resolution states they
        came from (batch, n_chars, hidden) -> (batch, n_chars, hidden)."""
        owner = torch.arange(full.shape[1], device=full.device) // self.rate  # each character's short position
        repeated = short.index_select(1, owner)
        return self.restored_norm(self.restore(torch.cat([full, repeated], dim=-1)))
