"""Pretraining the co-attention on unlabelled text (the paper's second proposed extension), so
fine-tuning starts from co-attention modules that already relate characters and subwords.

Both pretrained encoders stay fixed; the projections into the co-attention and the co-attention
modules learn masked language modelling through the two sides at once. Whole words are masked
on both sides together (``mask_rate`` of the words: all their characters and all their subwords;
a word is replaced by mask symbols, or random ones, or kept, 80/10/10 as BERT, the same way on
both sides), so a hidden word cannot be copied from the other side: each side predicts it from
its context and from what the other side makes of that context. The sides read each other
undetached (isolating them would keep each side from learning to be read). The subword side
predicts each masked subword (a linear layer over the tokenizer's vocabulary), the character
side each masked code point (its hash buckets, as character pretraining does).

The output directory holds the base model (encoders, projections, co-attention);
``entangle train --coattention-init DIR`` starts a model's projections and co-attention from it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from accelerate.utils import set_seed
from torch import nn
from transformers import PreTrainedTokenizerBase

from .data.features import CHAR_CLS, CHAR_MASK, CHAR_PAD, CHAR_SEP, SPACE
from .data.raw_text import RawCorpus
from .modeling.modeling_entangle import EntangleModel
from .options import ConfigError
from .pretraining import (
    CharMLMHead,
    PretrainCollator,
    PretrainConfig,
    PretrainState,
    build_examples,
    replace_masked,
    run_pretraining,
)

def mask_words(batch: dict, rate: float, generator: torch.Generator, mask_id: int, vocab_size: int
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Masked character ids, which characters were masked, masked subword ids, which subwords were
    masked: ``rate`` of the words (at least one per batch), all their characters and subwords. What
    a masked word becomes is drawn once for the word (as BERT: 80% masked, 10% random, 10% kept)
    and holds on both sides, so neither side shows the other a word it hides."""
    words = batch["word_mask"]  # (batch, words)
    chosen = (torch.rand(words.shape, generator=generator) < rate) & words
    if not chosen.any():
        rows, cols = words.nonzero(as_tuple=True)
        pick = torch.randint(len(rows), (1,), generator=generator)
        chosen[rows[pick], cols[pick]] = True
    how = torch.rand(words.shape, generator=generator)  # per word: < 0.8 masked, < 0.9 random, else kept

    def per_position(spans: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Which positions belong to a chosen word, and that word's draw."""
        positions = torch.arange(length)
        within = (positions >= spans[..., :1]) & (positions < spans[..., 1:]) & chosen[..., None]  # (batch, words, length)
        return within.any(1), (within * how[..., None]).sum(1)

    chars, subwords = batch["char_ids"], batch["subword_ids"]
    char_masked, char_how = per_position(batch["char_spans"], chars.shape[1])
    subword_masked, subword_how = per_position(batch["subword_spans"], subwords.shape[1])
    letters = chars[(chars != CHAR_PAD) & (chars != CHAR_CLS) & (chars != CHAR_SEP) & (chars != SPACE)]
    random_chars = letters[torch.randint(len(letters), chars.shape, generator=generator)]
    random_subwords = torch.randint(vocab_size, subwords.shape, generator=generator)
    return (replace_masked(chars, char_masked, char_how, CHAR_MASK, random_chars), char_masked,
            replace_masked(subwords, subword_masked, subword_how, mask_id, random_subwords), subword_masked)


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

    def forward(self, char_inputs, char_masked, subword_inputs, subword_masked, batch: dict) -> dict[str, torch.Tensor]:
        """Each side's MLM loss and accuracy."""
        states = self.base(char_inputs, (batch["char_ids"] != CHAR_PAD).long(), subword_inputs, batch["subword_mask"],
                           subword_char_starts=batch.get("subword_char_starts"),
                           subword_char_ends=batch.get("subword_char_ends"))
        char_loss, char_accuracy = self.char_head(states.char_states[char_masked], batch["char_ids"][char_masked])
        logits = self.subword_head(states.subword_states[subword_masked])
        targets = batch["subword_ids"][subword_masked]
        return {"char_mlm_loss": char_loss, "char_mlm_accuracy": char_accuracy,
                "subword_mlm_loss": F.cross_entropy(logits, targets),
                "subword_mlm_accuracy": (logits.argmax(-1) == targets).float().mean()}


def check_pretrainable(layers: int, char_pretrained: bool, char_name: str, positional_alignment: bool) -> None:
    """Refuse a model whose co-attention cannot be pretrained: ``entangle pretrain-coattention`` asks
    before it loads the encoders (from the options), :func:`pretrain_coattention` of the built model."""
    if layers == 0:
        raise ConfigError("there is no co-attention to pretrain (m = 0)")
    if not char_pretrained:
        raise ConfigError(f"the character encoder ({char_name}) is not pretrained: it stays fixed during "
                          "co-attention pretraining, so a random one would teach nothing (use builtin-en)")
    if positional_alignment:
        raise ConfigError("positional alignment starts fresh at fine-tuning (--coattention-init does not take "
                          "it): build the model to pretrain without it")


def pretrain_coattention(base: EntangleModel, tokenizer: PreTrainedTokenizerBase, corpus: RawCorpus,
                         config: PretrainConfig) -> dict:
    """Pretrain ``base``'s projections and co-attention in place on ``corpus``; save the base model
    to ``config.output_dir``; return the summary."""
    check_pretrainable(base.config.num_coattention_layers, base.config.char_encoder_pretrained,
                       base.config.char_encoder_name, base.config.positional_alignment)
    if base.config.isolate_sides:
        raise ConfigError("co-attention pretraining trains each side to be read by the other: build the model "
                          "with isolate_sides=False")
    if tokenizer.mask_token_id is None:
        raise ConfigError(f"the subword tokenizer ({tokenizer.name_or_path}) has no mask token to mask words with")
    examples = build_examples(corpus.texts, min(config.max_chars, base.config.max_chars), tokenizer,
                              base.config.max_subwords, subword_char_spans=base.config.alignment_bias)
    rows = base.subword_encoder.get_input_embeddings().num_embeddings
    # Random replacements are real tokens with an embedding row (a tokenizer with added tokens may
    # have more than the model embeds; a model may pad its rows past the tokenizer's vocabulary).
    vocabulary = min(len(tokenizer), rows)
    set_seed(config.seed)  # before the heads are built: the seed fixes their initialisation
    model = CoattentionPretrainingModel(base, rows)

    def step_outputs(model: nn.Module, batch: dict, state: PretrainState, device: torch.device) -> dict:
        masked = mask_words({k: v.cpu() for k, v in batch.items()}, config.mask_rate, state.mask_generator,
                            tokenizer.mask_token_id, vocabulary)
        return model(*(t.to(device) for t in masked), batch)

    return run_pretraining(model, examples, PretrainCollator(tokenizer.pad_token_id), corpus, config, step_outputs,
                           lambda model, output: model.base.save_pretrained(output),
                           about={"char": base.config.char_encoder_name, "subword": base.config.subword_encoder_name,
                                  "coattention_layers": base.config.num_coattention_layers})
