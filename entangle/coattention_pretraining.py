"""Pretraining the co-attention on unlabelled text (the paper's second proposed extension), so
fine-tuning starts from co-attention modules that already relate characters and subwords.

Both pretrained encoders stay fixed; the projections into the co-attention and the co-attention
modules learn masked language modelling through the two sides at once. Whole words are masked
on both sides together (``mask_rate`` of the words: all their characters and all their subwords;
80% replaced by the mask symbol, 10% by a random one, 10% kept, as BERT), so a masked word cannot
be copied from the other side: each side predicts it from its context and from what the other
side makes of that context. The subword side predicts each masked subword (a linear layer over
the tokenizer's vocabulary), the character side each masked code point (its hash buckets, as
character pretraining does).

The output directory holds the base model (encoders, projections, co-attention);
``entangle train --coattention-init DIR`` starts a model's projections and co-attention from it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedTokenizerBase

from .data.features import CHAR_CLS, CHAR_PAD, CHAR_SEP
from .data.raw_text import RawCorpus
from .modeling.modeling_entangle import EntangleModel
from .options import ConfigError
from .pretraining import CHAR_MASK, CharMLMHead, PretrainCollator, PretrainConfig, PretrainState, build_examples, \
    run_pretraining

def mask_words(batch: dict, rate: float, generator: torch.Generator, mask_id: int, vocab_size: int
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Masked character ids, which characters were masked, masked subword ids, which subwords were
    masked: ``rate`` of the words (at least one per batch), all their characters and subwords."""
    words = batch["word_mask"]  # (batch, words)
    chosen = (torch.rand(words.shape, generator=generator) < rate) & words
    if not chosen.any():
        rows, cols = words.nonzero(as_tuple=True)
        pick = torch.randint(len(rows), (1,), generator=generator)
        chosen[rows[pick], cols[pick]] = True

    def inside(spans: torch.Tensor, length: int) -> torch.Tensor:
        positions = torch.arange(length)
        within = (positions >= spans[..., :1]) & (positions < spans[..., 1:])  # (batch, words, length)
        return (within & chosen[..., None]).any(1)

    chars, subwords = batch["char_ids"], batch["subword_ids"]
    char_masked, subword_masked = inside(batch["char_spans"], chars.shape[1]), inside(batch["subword_spans"], subwords.shape[1])
    real_chars = chars[(chars != CHAR_PAD) & (chars != CHAR_CLS) & (chars != CHAR_SEP)]
    char_inputs = _replace(chars, char_masked, CHAR_MASK,
                           real_chars[torch.randint(len(real_chars), chars.shape, generator=generator)], generator)
    subword_inputs = _replace(subwords, subword_masked, mask_id,
                              torch.randint(vocab_size, subwords.shape, generator=generator), generator)
    return char_inputs, char_masked, subword_inputs, subword_masked


def _replace(ids: torch.Tensor, masked: torch.Tensor, mask_id: int, random_ids: torch.Tensor,
             generator: torch.Generator) -> torch.Tensor:
    """BERT's 80/10/10: the mask symbol, a random symbol, or the symbol itself."""
    how = torch.rand(ids.shape, generator=generator)
    inputs = ids.clone()
    inputs[masked & (how < 0.8)] = mask_id
    swap = masked & (how >= 0.8) & (how < 0.9)
    inputs[swap] = random_ids[swap]
    return inputs


class CoattentionPretrainingModel(nn.Module):
    """The base model with fixed encoders and an MLM head per side (the heads are dropped at the end)."""

    def __init__(self, base: EntangleModel, vocab_size: int):
        super().__init__()
        self.base = base
        for encoder in (base.char_encoder, base.subword_encoder):
            encoder.requires_grad_(False)
        width = base.config.hidden_size
        self.subword_head = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width),
                                          nn.Linear(width, vocab_size))
        self.char_head = CharMLMHead(width)

    def train(self, mode: bool = True) -> "CoattentionPretrainingModel":
        super().train(mode)
        for encoder in (self.base.char_encoder, self.base.subword_encoder):
            encoder.eval()  # fixed: no dropout either
        return self

    def losses(self, char_inputs, char_masked, subword_inputs, subword_masked, batch: dict) -> dict[str, torch.Tensor]:
        states = self.base(char_inputs, (batch["char_ids"] != CHAR_PAD).long(), subword_inputs, batch["subword_mask"])
        char_loss, char_accuracy = self.char_head(states.char_states[char_masked], batch["char_ids"][char_masked])
        logits = self.subword_head(states.subword_states[subword_masked])
        targets = batch["subword_ids"][subword_masked]
        return {"char_mlm_loss": char_loss, "char_mlm_accuracy": char_accuracy,
                "subword_mlm_loss": F.cross_entropy(logits, targets),
                "subword_mlm_accuracy": (logits.argmax(-1) == targets).float().mean()}


def pretrain_coattention(base: EntangleModel, tokenizer: PreTrainedTokenizerBase, corpus: RawCorpus,
                         config: PretrainConfig) -> dict:
    """Pretrain ``base``'s projections and co-attention in place on ``corpus``; save the base model
    to ``config.output_dir``; return the summary."""
    if base.config.num_coattention_layers == 0:
        raise ConfigError("there is no co-attention to pretrain (m = 0)")
    if base.config.positional_alignment:
        raise ConfigError("pretraining does not feed positional alignment (each subword's character span) yet")
    if tokenizer.mask_token_id is None:
        raise ConfigError(f"the subword tokenizer ({tokenizer.name_or_path}) has no mask token to mask words with")
    examples = build_examples(corpus.texts, min(config.max_chars, base.config.max_chars), tokenizer,
                              base.config.max_subwords)
    model = CoattentionPretrainingModel(base, len(tokenizer))

    def step_losses(model: CoattentionPretrainingModel, batch: dict, state: PretrainState,
                    device: torch.device) -> torch.Tensor:
        masked = mask_words({k: v.cpu() for k, v in batch.items()}, config.mask_rate, state.mask_generator,
                            tokenizer.mask_token_id, len(tokenizer))
        losses = model.losses(*(t.to(device) for t in masked), batch)
        for name, value in losses.items():
            state.add(name, value.item())
        return losses["char_mlm_loss"] + losses["subword_mlm_loss"]

    return run_pretraining(model, examples, PretrainCollator(tokenizer.pad_token_id), corpus, config, step_losses,
                           lambda model, output: model.base.save_pretrained(output),
                           about={"char": base.config.char_encoder_name, "subword": base.config.subword_encoder_name,
                                  "coattention_layers": base.config.num_coattention_layers})
