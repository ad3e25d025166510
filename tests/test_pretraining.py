"""Character encoder pretraining: masking, span pooling, both objectives, resume, loading the result."""

from __future__ import annotations

import json

import pytest
import torch
from tiny import CORPUS, LABELS, char_encoder, subword_encoder

from entangle.data.features import CHAR_CLS, CHAR_MASK, CHAR_PAD, CHAR_SEP
from entangle.data.raw_text import RawCorpus, read_raw_corpus
from entangle.data.words import split_words
from entangle.pretraining import (
    LOG,
    CharPretrainingModel,
    PretrainConfig,
    build_examples,
    mask_spans,
    pool_spans,
    pretrain_char,
)


def corpus() -> RawCorpus:
    raw = RawCorpus()
    raw.add("tiny", [split_words(text) for text in CORPUS])
    return raw


def log(output) -> list[dict]:
    return [json.loads(line) for line in (output / LOG).read_text().splitlines()]


@pytest.mark.parametrize(("option", "message"), [
    ({"mask_rate": 1.0}, r"--mask-rate must be in \(0, 1\), got 1.0"),
    # The decay after the warm-up would divide by zero at the last step.
    ({"warmup_ratio": 1.0}, r"warmup_ratio must be in \[0, 1\), got 1.0"),
    ({"max_steps": 0}, "--max-steps must be at least 1, got 0"),
    ({"seed": 2**32}, r"--seed must be between 0 and 2\*\*32 - 1, got 4294967296"),
    ({"mixed_precision": "fp8"}, "mixed_precision must be one of no, fp16, bf16, got 'fp8'"),
])
def test_a_pretraining_config_out_of_range_is_refused_when_made(option, message):
    from entangle.options import ConfigError

    with pytest.raises(ConfigError, match=message):
        PretrainConfig(output_dir="x", **option)


def test_spans_cover_each_owned_word_on_every_side():
    tokenizer = subword_encoder("bert")[1]
    texts = [["Naïve", "café", "owners", "love", "crème"], ["a", "b"]]
    examples = build_examples(texts, max_chars=16, tokenizer=tokenizer, max_subwords=64, noise_rate=1.0, seed=0)
    owned = []
    for example in examples:
        for (start, end), (n_start, n_end) in zip(example.char_spans, example.noisy_char_spans):
            owned.append("".join(map(chr, example.char_ids[start:end])))
            noisy = "".join(map(chr, example.noisy_char_ids[n_start:n_end]))
            assert noisy == owned[-1] or len(owned[-1]) >= 4  # only words of 4+ letters are misspelled
        assert len(example.subword_spans) == len(example.char_spans)
        assert all(end > start for start, end in example.subword_spans)
    assert owned == [w for t in texts for w in t]  # windows of 16 characters still own every word once
    assert any(e.noisy_char_ids != e.char_ids for e in examples)


def test_masking_touches_only_real_characters_and_is_seeded():
    ids = torch.tensor([[CHAR_CLS, *map(ord, "hello world"), CHAR_SEP], [CHAR_CLS, *map(ord, "hi"), CHAR_SEP] + [CHAR_PAD] * 9])
    inputs, masked = mask_spans(ids, 0.5, 3, torch.Generator().manual_seed(0))
    again, masked_again = mask_spans(ids, 0.5, 3, torch.Generator().manual_seed(0))
    assert torch.equal(inputs, again) and torch.equal(masked, masked_again)
    assert masked.any()
    special = (ids == CHAR_CLS) | (ids == CHAR_SEP) | (ids == CHAR_PAD)
    assert not (masked & special).any()
    assert torch.equal(inputs[~masked], ids[~masked])
    assert (inputs[masked] == CHAR_MASK).any()


def test_pooling_averages_inside_spans_only():
    states = torch.arange(12.0).reshape(1, 6, 2)
    spans = torch.tensor([[[1, 3], [4, 5], [0, 0]]])
    pooled = pool_spans(states, spans)
    assert torch.allclose(pooled[0, 0], states[0, 1:3].mean(0))
    assert torch.allclose(pooled[0, 1], states[0, 4])
    assert torch.equal(pooled[0, 2], torch.zeros(2))  # an empty (padding) span


def test_centered_distillation_ignores_the_direction_every_teacher_state_shares():
    """An anisotropic teacher (all states near one direction) must not let the student score well by
    matching that direction alone: the centred loss is unchanged by adding one vector to every
    teacher state, and the plain cosine loss is not."""
    torch.manual_seed(0)
    encoder = char_encoder("builtin")
    char_ids = torch.randint(40, 120, (2, 12))
    spans = torch.tensor([[[1, 4], [5, 9]], [[1, 6], [7, 11]]])
    word_mask = torch.ones(2, 2, dtype=torch.bool)
    teacher = torch.randn(2, 2, 16)
    shared = 50 * torch.randn(16)
    losses = {}
    for kind in ("cosine", "centered"):
        model = CharPretrainingModel(encoder, ("distill",), 16, distill_loss=kind).eval()  # no dropout
        torch.manual_seed(1)
        model.projection.reset_parameters()
        losses[kind] = [model.distill(char_ids, spans, word_mask, t).item() for t in (teacher, teacher + shared)]
    assert losses["centered"][0] == pytest.approx(losses["centered"][1], abs=1e-5)
    assert abs(losses["cosine"][0] - losses["cosine"][1]) > 1e-3
    with pytest.raises(ValueError, match="centered"):
        PretrainConfig(output_dir="x", distill_loss="cosine-centred")


@pytest.mark.parametrize("objectives,char", [(("mlm",), "builtin"), (("distill",), "builtin"),
                                             (("mlm", "distill"), "canine")])
def test_losses_fall(tmp_path, objectives, char):
    teacher, tokenizer = subword_encoder("bert")
    config = PretrainConfig(output_dir=str(tmp_path), objectives=objectives, max_steps=40, batch_size=8, lr=3e-3,
                            log_steps=10, save_steps=100, max_chars=64)
    summary = pretrain_char(char_encoder(char), corpus(), config, teacher, tokenizer)
    records = log(tmp_path)
    assert summary["steps"] == 40 and len(records) == 4
    keys = {"mlm": ["mlm_loss"], "distill": ["distill_loss", "distill_noisy_loss"]}
    for key in [k for objective in objectives for k in keys[objective]]:
        assert records[-1][key] < records[0][key], (key, records)
    assert (tmp_path / "pretrain_losses.png").stat().st_size > 0


def test_interrupted_pretraining_resumes_exactly(tmp_path):
    teacher, tokenizer = subword_encoder("bert")

    def options(name, **extra):
        return PretrainConfig(output_dir=str(tmp_path / name), max_steps=12, batch_size=8, log_steps=2, save_steps=4,
                              max_chars=64, seed=5, **extra)

    torch.manual_seed(0)
    reference = char_encoder()
    pretrain_char(reference, corpus(), options("reference"), teacher, tokenizer)

    torch.manual_seed(0)
    interrupted = char_encoder()
    initial = interrupted.state_dict()["lstm.weight_hh_l0"].clone()
    forward, calls = interrupted.forward, {"n": 0}

    def dying_forward(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3 * 6 + 1:  # 3 passes a step (masked, clean, noisy): step 7, after the checkpoint at 4
            raise KeyboardInterrupt("killed")
        return forward(*args, **kwargs)

    interrupted.forward = dying_forward
    with pytest.raises(KeyboardInterrupt):
        pretrain_char(interrupted, corpus(), options("resumed"), teacher, tokenizer)
    assert len(log(tmp_path / "resumed")) == 3  # steps 2, 4, 6 were logged before the kill
    # Killed after the checkpoint at step 4: the directory already is that step's encoder.
    from entangle.modeling.encoders import load_char_encoder

    at_step_4 = load_char_encoder(str(tmp_path / "resumed")).state_dict()["lstm.weight_hh_l0"]
    at_step_6 = interrupted.state_dict()["lstm.weight_hh_l0"].cpu()  # on the GPU when there is one
    assert not torch.equal(at_step_4, initial) and not torch.equal(at_step_4, at_step_6)
    torch.manual_seed(0)
    resumed = char_encoder()
    pretrain_char(resumed, corpus(), options("resumed", resume=True), teacher, tokenizer)
    def losses(name):
        return [{k: v for k, v in record.items() if k != "elapsed_s"} for record in log(tmp_path / name)]

    assert losses("resumed") == losses("reference") and len(losses("reference")) == 6
    for (name, expected), actual in zip(reference.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(expected.cpu(), actual.cpu()), name


@pytest.mark.parametrize("pretraining", ["char", "coattention"])
def test_each_step_calls_the_model_accelerate_prepared(tmp_path, monkeypatch, request, pretraining):
    """DDP averages gradients, and mixed precision applies, only in the forward of the model that
    ``Accelerator.prepare`` returned: a step that called the unwrapped model got neither (and
    ``--mixed-precision`` was not an option of pretraining)."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from torch import nn

    calls = []

    class Prepared(nn.Module):  # stands in for DDP's wrapper
        def __init__(self, module: nn.Module):
            super().__init__()
            self.module = module

        def forward(self, *args, **kwargs):
            calls.append(torch.is_autocast_enabled(next(self.module.parameters()).device.type))
            return self.module(*args, **kwargs)

    # Accelerate keeps one state per process and refuses another precision than the first Accelerator's.
    AcceleratorState._reset_state()
    request.addfinalizer(AcceleratorState._reset_state)
    prepare = Accelerator.prepare
    monkeypatch.setattr(Accelerator, "prepare", lambda self, model, *rest: (Prepared(model.to(self.device)), *prepare(self, *rest)))
    monkeypatch.setattr(Accelerator, "unwrap_model", lambda self, model, **kwargs: model.module)
    config = PretrainConfig(output_dir=str(tmp_path), objectives=("mlm",), max_steps=3, batch_size=4, save_steps=2,
                            mixed_precision="bf16")
    if pretraining == "char":
        teacher, tokenizer = subword_encoder("bert")
        config.objectives = ("mlm", "distill")
        summary = pretrain_char(char_encoder(), corpus(), config, teacher, tokenizer)
        assert {"mlm_loss", "distill_loss", "distill_noisy_loss"} <= set(summary["last_log"])
    else:
        from test_coattention_pretraining import PRETRAINABLE
        from tiny import tiny_model

        from entangle.coattention_pretraining import pretrain_coattention

        model, tokenizer = tiny_model(m=1, **PRETRAINABLE)
        summary = pretrain_coattention(model.entangle, tokenizer, corpus(), config)
        assert {"char_mlm_loss", "subword_mlm_loss"} <= set(summary["last_log"])
    assert calls == [True] * 3  # once a step (DDP's reducer expects one forward before each backward), in bf16


def test_the_result_loads_as_the_character_side(tmp_path):
    from tiny import tiny_model  # noqa: F401  (the Auto classes are registered by importing entangle)

    from entangle.modeling import EntangleForTokenClassification

    config = PretrainConfig(output_dir=str(tmp_path / "char"), objectives=("mlm",), max_steps=3, batch_size=8)
    encoder = char_encoder()
    pretrain_char(encoder, corpus(), config)
    teacher, tokenizer = subword_encoder("bert")
    model, _ = EntangleForTokenClassification.from_encoders(str(tmp_path / "char"), teacher, LABELS, tokenizer=tokenizer,
                                                            num_coattention_layers=1, num_attention_heads=2,
                                                            intermediate_size=48)
    assert model.config.char_encoder_pretrained
    for name, value in encoder.state_dict().items():
        assert torch.equal(model.entangle.char_encoder.state_dict()[name], value.cpu()), name  # trained on the GPU if any
    record = json.loads((tmp_path / "char" / "corpus.json").read_text())  # written when the run starts
    assert record["windows"] > 0 and record["sources"][0]["texts"] == len(corpus().texts)



def test_corpus_reads_train_splits_only_and_names_bad_lines(tmp_path):
    good = tmp_path / "texts.txt"
    # A line of invisible characters only has no words, as predict reads it: skipped like a blank one.
    good.write_text("first text , here\n\n\u00ad\u200b\u200d\nsecond one\n", encoding="utf-8")
    raw = read_raw_corpus([str(good)])
    assert raw.texts == [["first", "text", ",", "here"], ["second", "one"]]
    assert raw.sources[0].texts == 2 and raw.sources[0].words == 6
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: not valid UTF-8"):
        read_raw_corpus([str(bad)])
    with pytest.raises(ValueError, match="no pretraining text"):
        read_raw_corpus()


def test_a_time_budget_stops_early_and_ends_its_schedule(tmp_path):
    config = PretrainConfig(output_dir=str(tmp_path), objectives=("mlm",), max_steps=10_000, max_minutes=0.1,
                            batch_size=4, log_steps=1)
    summary = pretrain_char(char_encoder(), corpus(), config)
    records = log(tmp_path)
    assert 0 < summary["steps"] < 10_000 and summary["pretrain_time_s"] >= 6.0
    assert records[-1]["lr"] < max(r["lr"] for r in records)  # decayed over the time budget, not over 10,000 steps


def test_without_warm_up_the_schedule_starts_at_the_rate_and_ends_above_0(tmp_path):
    config = PretrainConfig(output_dir=str(tmp_path), objectives=("mlm",), max_steps=4, batch_size=4, log_steps=1,
                            warmup_ratio=0.0, lr=1e-3)
    pretrain_char(char_encoder(), corpus(), config)
    assert [r["lr"] for r in log(tmp_path)] == pytest.approx([1e-3, 0.75e-3, 0.5e-3, 0.25e-3])  # no last step at 0


def test_windows_fit_the_encoders_position_table_and_so_does_the_noisy_copy(tmp_path):
    long_words = [["wonderful", "extraordinary", "magnificent", "spectacular"] * 20]
    examples = build_examples(long_words, 48, noise_rate=1.0, noise_attacks=("repeat",), seed=0)
    assert max(len(e.noisy_char_ids) for e in examples) <= 48  # repeats lengthen words past the window's limit
    assert any(e.noisy_char_ids != e.char_ids for e in examples)
    raw = RawCorpus()
    raw.add("long", long_words)
    encoder = char_encoder("canine")  # 64 positions (its hash buckets): --max-chars 256 is cut to them
    config = PretrainConfig(output_dir=str(tmp_path), objectives=("mlm",), max_steps=2, batch_size=2)
    assert pretrain_char(encoder, raw, config)["steps"] == 2


def test_words_keep_their_combining_marks():
    # Yoruba tone marks written as combining characters (U+0300/U+0301), Devanagari vowel signs.
    assert split_words("Ó ǹjẹ́ lọ sí Ọ̀yọ́. हिन्दी भाषा") == ["Ó", "ǹjẹ́", "lọ", "sí", "Ọ̀yọ́", ".", "हिन्दी", "भाषा"]
