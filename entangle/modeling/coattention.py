"""Co-attention between the character and the subword sequence (ViLBERT-style).

One module i updates both sides in parallel from the states of module i:

    subword side:   H_s' = TRM(CO-TRM(Q=H_s, K=V=H_c))
    character side: H_c' = TRM(CO-TRM(Q=H_c, K=V=H_s))

CO-TRM and TRM are the same post-layer-norm transformer block (as in BERT, whose states both
sides start from); CO-TRM takes its keys and values from the other side and masks that side's
padding, TRM attends within its own side and masks its own padding.

With ``alignment_bias``, CO-TRM adds a learned bonus per head to the score of each pair of a
character and the subword that spells it. Measured on trained models, the cross-attention finds
a word's own positions on the other side hardly more often than at random
(``benchmarks/attention_alignment.py``); the bonus starts it where it should look.

Attention runs in PyTorch's fused kernel, which keeps no (queries x keys) matrix, except where none
of PyTorch's fused kernels applies dropout: training on the CPU. There the math fallback keeps every
score, its softmax and its dropout for the backward pass (a default training step on 16 texts of
1,000 characters peaked at 11.4 GB, 5.2 GB in slices: benchmarks/RESULTS.md), so above
``CHUNKED_ATTENTION_SCORES`` a block attends in slices of queries, each recomputed in the backward
pass (:func:`torch.utils.checkpoint.checkpoint`, which replays the dropout draws).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


#: The starting score bonus of an aligned character-subword pair (``alignment_bias``).
ALIGNMENT_BIAS_INIT = 2.0
#: Scores (batch x heads x queries x keys) above which CPU training attends in slices of queries: a
#: 128 MB float32 matrix. Below it (16 texts of up to 418 characters, with 12 heads), attention is
#: computed whole, with the same dropout draws as before slices existed.
CHUNKED_ATTENTION_SCORES = 2**25


def _query_slice(q: torch.Tensor, k: torch.Tensor, dropout: float) -> int | None:
    """How many queries to attend at a time where the whole score matrix would be kept for the
    backward pass and is too large (CPU training with dropout); ``None`` to attend all at once."""
    # Sizes last: inference, export and compiled graphs never compare them.
    if not dropout or not torch.is_grad_enabled() or q.device.type == "cuda":  # CUDA's kernels apply dropout
        return None
    batch, heads, queries, _ = q.shape
    per_query = batch * heads * k.shape[2]
    return None if per_query * queries <= CHUNKED_ATTENTION_SCORES else max(1, CHUNKED_ATTENTION_SCORES // per_query)


class TransformerBlock(nn.Module):
    """Multi-head attention + residual + layer norm, feed-forward + residual + layer norm."""

    def __init__(self, hidden_size: int, num_heads: int, intermediate_size: int, dropout: float,
                 attention_dropout: float, layer_norm_eps: float, alignment_bias: bool = False):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden size {hidden_size} is not divisible by {num_heads} attention heads")
        self.num_heads = num_heads
        # A score bonus per head for aligned pairs: exp(2) makes an aligned key about 7x as likely at the start.
        self.alignment_bias = nn.Parameter(torch.full((num_heads,), ALIGNMENT_BIAS_INIT)) if alignment_bias else None
        self.attention_dropout = attention_dropout
        self.query = nn.Linear(hidden_size, hidden_size)
        # Keys and values come from the same sequence, so one matmul computes both.
        self.key_value = nn.Linear(hidden_size, 2 * hidden_size)
        self.attention_output = nn.Linear(hidden_size, hidden_size)
        self.attention_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.feed_forward = nn.Sequential(
            nn.Linear(hidden_size, intermediate_size),
            nn.GELU(),
            nn.Linear(intermediate_size, hidden_size),
        )
        self.output_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        return x.view(batch, length, self.num_heads, width // self.num_heads).transpose(1, 2)

    def attention_probabilities(self, x: torch.Tensor, context: torch.Tensor, context_mask: torch.Tensor,
                                alignment: torch.Tensor | None = None) -> torch.Tensor:
        """(batch, heads, n_q, n_kv): how much each query position attends to each context position, as
        ``forward`` weighs them (without dropout). For inspection (``entangle attention``): the fused
        attention kernel of ``forward`` does not return its weights."""
        return self._probabilities(self._heads(self.query(x)), self._heads(self.key_value(context).chunk(2, dim=-1)[0]),
                                   context_mask, alignment)

    def _probabilities(self, q: torch.Tensor, k: torch.Tensor, context_mask: torch.Tensor,
                       alignment: torch.Tensor | None) -> torch.Tensor:
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        if alignment is not None:
            scores = scores + self._bonus(alignment, scores.dtype)
        return scores.masked_fill(~context_mask[:, None, None, :].bool(), float("-inf")).softmax(-1)

    def _bonus(self, alignment: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """(batch, heads, n_q, n_kv): each head's bonus where a pair is aligned, 0 elsewhere."""
        return alignment[:, None].to(dtype) * self.alignment_bias[None, :, None, None].to(dtype)

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, context_mask: torch.Tensor,
                alignment: torch.Tensor | None, dropout: float) -> torch.Tensor:
        """(batch, heads, n_q, head_dim): the queries' weighted values, in PyTorch's attention kernel."""
        if alignment is None:
            # (batch, 1, n_q, n_kv), broadcast over heads. The query axis is a view in PyTorch but must
            # be spelled out for ONNX Runtime's Attention kernel.
            mask = context_mask[:, None, None, :].bool().expand(-1, -1, q.shape[2], -1)
        else:  # the bonus and the padding as one additive mask (spelled out: 5% slower on CPU)
            mask = self._bonus(alignment, q.dtype).masked_fill(~context_mask[:, None, None, :].bool(), float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)

    def _attend_in_slices(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, context_mask: torch.Tensor,
                          alignment: torch.Tensor | None, dropout: float, rows: int) -> torch.Tensor:
        """``_attend`` over ``rows`` queries at a time, each slice recomputed (its dropout replayed) in
        the backward pass, so that only one slice's scores exist at once."""
        return torch.cat([
            checkpoint(self._attend, q[:, :, start:start + rows], k, v, context_mask,
                       None if alignment is None else alignment[:, start:start + rows], dropout, use_reentrant=False)
            for start in range(0, q.shape[2], rows)], dim=2)

    def forward(self, x: torch.Tensor, context: torch.Tensor, context_mask: torch.Tensor,
                alignment: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` (batch, n_q, dim) attends over ``context`` (batch, n_kv, dim); ``context_mask``
        (batch, n_kv) is True at real positions. Pass ``context=x`` for self-attention.
        ``alignment`` (batch, n_q, n_kv), with ``alignment_bias``: the pairs that get its bonus."""
        batch, length, width = x.shape
        q = self._heads(self.query(x))  # (batch, heads, n_q, head_dim)
        k, v = (self._heads(t) for t in self.key_value(context).chunk(2, dim=-1))  # (batch, heads, n_kv, head_dim)
        dropout = self.attention_dropout if self.training else 0.0
        if alignment is not None and torch.onnx.is_in_onnx_export():
            # Spelled out: torch.export's decomposition of the fused kernel with an additive mask broke
            # the exported graph. The export's check against PyTorch compares the two ways.
            attended = self._probabilities(q, k, context_mask, alignment) @ v
        elif rows := _query_slice(q, k, dropout):
            attended = self._attend_in_slices(q, k, v, context_mask, alignment, dropout, rows)
        else:
            attended = self._attend(q, k, v, context_mask, alignment, dropout)
        attended = attended.transpose(1, 2).reshape(batch, length, width)  # (batch, n_q, dim)
        x = self.attention_norm(x + self.dropout(self.attention_output(attended)))
        return self.output_norm(x + self.dropout(self.feed_forward(x)))


class CoAttentionModule(nn.Module):
    """One co-attention module for one side: CO-TRM over the other side, then TRM over its own."""

    def __init__(self, alignment_bias: bool = False, **block_kwargs):
        super().__init__()
        self.cross = TransformerBlock(alignment_bias=alignment_bias, **block_kwargs)
        self.self_attention = TransformerBlock(**block_kwargs)

    def forward(self, own: torch.Tensor, own_mask: torch.Tensor, other: torch.Tensor,
                other_mask: torch.Tensor, alignment: torch.Tensor | None = None) -> torch.Tensor:
        mixed = self.cross(own, other, other_mask, alignment)
        return self.self_attention(mixed, mixed, own_mask)


class CoAttentionStack(nn.Module):
    """``m`` co-attention modules per side, separate weights per side and per module.
    ``isolate_sides``: each side reads the other's states detached (see ``EntangleConfig``)."""

    def __init__(self, num_layers: int, isolate_sides: bool = False, **block_kwargs):
        super().__init__()
        self.isolate_sides = isolate_sides
        self.subword_layers = nn.ModuleList(CoAttentionModule(**block_kwargs) for _ in range(num_layers))
        self.char_layers = nn.ModuleList(CoAttentionModule(**block_kwargs) for _ in range(num_layers))

    def forward(self, char_states: torch.Tensor, char_mask: torch.Tensor, subword_states: torch.Tensor,
                subword_mask: torch.Tensor, sides: tuple[str, ...] = ("char", "subword"),
                alignment: torch.Tensor | None = None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Both sides' final states; a side not in ``sides`` is ``None`` and its last module is
        skipped (nothing reads it), which saves a module's work when one side predicts.
        ``alignment`` (batch, n_chars, n_subwords): which character lies in which subword (the
        pairs the cross-attention's ``alignment_bias`` favours)."""
        char_alignment, subword_alignment = (alignment, alignment.transpose(1, 2)) if alignment is not None else (None, None)
        last = len(self.subword_layers) - 1
        for i, (subword_layer, char_layer) in enumerate(zip(self.subword_layers, self.char_layers)):
            # What each side reads of the other: the same values, without a way back for gradients
            # when the sides are isolated.
            char_context, subword_context = (
                (char_states.detach(), subword_states.detach()) if self.isolate_sides else (char_states, subword_states)
            )
            # Both updates read the states of this module: the tuple assignment keeps them parallel.
            subword_states, char_states = (
                subword_layer(subword_states, subword_mask, char_context, char_mask, subword_alignment)
                if i < last or "subword" in sides else None,
                char_layer(char_states, char_mask, subword_context, subword_mask, char_alignment)
                if i < last or "char" in sides else None,
            )
        return char_states, subword_states
