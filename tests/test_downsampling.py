"""The shortened character sequence of the co-attention (``modeling/downsampling.py``)."""

import pytest
import torch

from entangle.modeling.downsampling import CharDownsampling
from entangle.options import ConfigError
from test_modeling import SENTENCES, batch_for
from tiny import tiny_model


@pytest.mark.parametrize("rate, length", [(2, 7), (4, 8), (3, 1)])
def test_shortened_length_and_mask(rate, length):
    downsampling = CharDownsampling(8, rate, 1e-12)
    mask = torch.tensor([[1] * length, [1] * (length // 2 + 1) + [0] * (length - length // 2 - 1)])
    short, short_mask = downsampling.down(torch.randn(2, length, 8), mask)
    n_short = -(-length // rate)
    assert short.shape == (2, n_short, 8)
    real = [-(-int(row.sum()) // rate) for row in mask]  # a short position is real if any of its characters is
    assert short_mask.tolist() == [[1] * r + [0] * (n_short - r) for r in real]
    assert downsampling.up(short, torch.randn(2, length, 8)).shape == (2, length, 8)


def test_the_padding_after_a_sequence_changes_nothing():
    torch.manual_seed(0)
    downsampling = CharDownsampling(8, 3, 1e-12)
    states = torch.randn(1, 5, 8)
    short, _ = downsampling.down(states, torch.ones(1, 5, dtype=torch.long))
    padded, _ = downsampling.down(torch.cat([states, torch.randn(1, 4, 8)], dim=1),
                                  torch.tensor([[1] * 5 + [0] * 4]))
    torch.testing.assert_close(padded[:, : short.shape[1]], short)


def test_rate_one_is_the_model_without_it():
    model, _ = tiny_model(m=1)
    assert model.entangle.char_downsampling is None
    assert not any("downsampling" in name for name, _ in model.named_parameters())


def test_the_coattention_reads_the_shorter_sequence():
    model, tokenizer = tiny_model(m=1, char_downsample=4)
    seen = []
    model.entangle.coattention.char_layers[0].register_forward_hook(lambda module, args, out: seen.append(out.shape))
    batch = batch_for(model, tokenizer, SENTENCES[:2])
    out = model(**batch)
    n_chars = batch["char_ids"].shape[1]
    assert seen[0][1] == -(-n_chars // 4)
    assert out.char_logits.shape[:2] == out.subword_logits.shape[:2]  # every word still gets its logits


def test_a_rate_without_coattention_or_below_one_is_refused():
    with pytest.raises(ConfigError, match="char_downsample .* needs co-attention"):
        tiny_model(m=0, side="char", char_downsample=2)
    with pytest.raises(ConfigError, match="char_downsample must be >= 1"):
        tiny_model(m=1, char_downsample=0)
