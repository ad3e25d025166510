"""Shapes, padding invariance, parallel co-attention updates, save/load."""

import json
import warnings
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from entangle.modeling import CharEncoderConfig, CharEncoderModel, EntangleConfig, EntangleForTokenClassification
from entangle.options import ConfigError
from entangle.predict import Tagger
from tiny import LABELS, WIDTH, charbert_model, tiny_model

SENTENCES = [
    ["Empire", "State", "Building", "is", "in", "New", "York"],
    ["lol", "sooo", "gooood"],
    ["Naïve", "café", "owners", "in", "São", "Paulo", "love", "crème", "brûlée", "😀", "#blessed"],
]


def batch_for(model, tokenizer, sentences):
    tagger = Tagger(model, tokenizer)
    return tagger.collator(tagger.featurizer.featurize(sentences))


@pytest.mark.parametrize("m", [0, 1, 2, 3])
def test_both_sides_give_a_logit_vector_per_word(m):
    model, tokenizer = tiny_model(m=m)
    out = model(**batch_for(model, tokenizer, SENTENCES))
    n_words = max(map(len, SENTENCES))
    assert out.subword_logits.shape == (3, n_words, len(LABELS))
    assert out.char_logits.shape == (3, n_words, len(LABELS))
    assert torch.equal(out.logits, out.subword_logits)
    assert len(model.entangle.coattention.subword_layers) == m == len(model.entangle.coattention.char_layers)


@pytest.mark.parametrize("m", [1, 2])
def test_one_side_only_skips_the_other_sides_last_module_and_changes_nothing(m):
    model, tokenizer = tiny_model(m=m)
    batch = batch_for(model, tokenizer, SENTENCES)
    full = model(**batch)
    for side in ("subword", "char"):
        fast = model(**batch, sides=(side,))
        assert torch.equal(getattr(fast, f"{side}_logits"), getattr(full, f"{side}_logits"))
        assert getattr(fast, f"{'char' if side == 'subword' else 'subword'}_logits") is None
    tagger = Tagger(model, tokenizer, decoding="argmax")
    expected = {side: [p.argmax(-1) for p in probs] for side, probs in tagger.probabilities(SENTENCES).items()}
    for side in ("subword", "char"):
        assert [t.labels for t in tagger.tag(SENTENCES, side)] == [
            [LABELS[i] for i in row.tolist()] for row in expected[side]]
    calls = []
    model.entangle.coattention.char_layers[-1].register_forward_hook(lambda *args: calls.append(1))
    model(**batch, sides=("subword",))
    assert not calls  # the character side's last module did not run
    with pytest.raises(ValueError, match="heads for"):
        tiny_model(m=m, side="subword")[0](**batch, sides=("char",))


def test_one_sided_baselines_do_not_build_the_other_encoder():
    subword_only, _ = tiny_model(m=0, side="subword")
    assert subword_only.entangle.char_encoder is None and subword_only.config.char_config is None
    char_only, tokenizer = tiny_model(m=0, side="char")
    assert char_only.entangle.subword_encoder is None
    out = char_only(**batch_for(char_only, tokenizer, SENTENCES))
    assert out.subword_logits is None and out.char_logits.shape[-1] == len(LABELS)


def test_width_projection_only_where_widths_differ():
    model, _ = tiny_model(m=1)
    assert isinstance(model.entangle.char_projection, torch.nn.Linear)  # 16 -> 32
    assert isinstance(model.entangle.subword_projection, torch.nn.Identity)
    assert model.config.hidden_size == WIDTH


@pytest.mark.parametrize("family", ["bert", "roberta", "xlmr"])
@pytest.mark.parametrize("m, options", [(0, {}), (2, {}), (2, {"char_downsample": 3}), (2, {"positional_alignment": True}),
                                        (2, {"alignment_bias": True}), (2, {"alignment_bias": True, "char_downsample": 3})],
                         ids=["m0", "m2", "m2-downsample3", "m2-positional-alignment", "m2-alignment-bias",
                              "m2-downsample3-alignment-bias"])
def test_padding_invariance(family, m, options):
    """Adding a longer sentence to the batch leaves the other sentences' logits unchanged."""
    model, tokenizer = tiny_model(m=m, family=family, **options)
    short = SENTENCES[:2]
    alone = model(**batch_for(model, tokenizer, short))
    padded = model(**batch_for(model, tokenizer, short + [SENTENCES[2] * 2]))
    for side in ("subword_logits", "char_logits"):
        for row, words in enumerate(short):
            a = getattr(alone, side)[row, : len(words)]
            b = getattr(padded, side)[row, : len(words)]
            assert torch.allclose(a, b, atol=1e-5), (side, row, (a - b).abs().max())


def test_coattention_sides_update_in_parallel():
    """Module i's character side attends to the subword states *entering* module i, not the updated ones."""
    model, _ = tiny_model(m=1)
    stack = model.entangle.coattention
    chars, subwords = torch.randn(2, 9, WIDTH), torch.randn(2, 5, WIDTH)
    char_mask, subword_mask = torch.ones(2, 9, dtype=torch.bool), torch.ones(2, 5, dtype=torch.bool)
    char_mask[1, 6:] = False
    new_chars, new_subwords = stack(chars, char_mask, subwords, subword_mask)
    expected_chars = stack.char_layers[0](chars, char_mask, subwords, subword_mask)
    expected_subwords = stack.subword_layers[0](subwords, subword_mask, chars, char_mask)
    assert torch.allclose(new_chars, expected_chars) and torch.allclose(new_subwords, expected_subwords)
    # separate weights per side
    assert stack.char_layers[0].cross.query.weight.data_ptr() != stack.subword_layers[0].cross.query.weight.data_ptr()


def test_cross_attention_ignores_the_other_sides_padding():
    model, _ = tiny_model(m=1)
    module = model.entangle.coattention.subword_layers[0]
    subwords, chars = torch.randn(1, 5, WIDTH), torch.randn(1, 9, WIDTH)
    mask = torch.ones(1, 9, dtype=torch.bool)
    mask[0, 6:] = False
    changed = chars.clone()
    changed[0, 6:] = 100.0  # garbage in padded positions
    own_mask = torch.ones(1, 5, dtype=torch.bool)
    assert torch.allclose(module(subwords, own_mask, chars, mask), module(subwords, own_mask, changed, mask), atol=1e-6)


@pytest.mark.parametrize("alignment_bias", [False, True])
def test_long_sequences_train_in_slices_of_queries_with_the_same_values_and_gradients(alignment_bias, monkeypatch):
    """CPU training with attention dropout keeps every score for the backward pass; above a size a
    block attends a slice of queries at a time, recomputed in the backward pass with the same
    dropout draws: the gradients are those of the slices computed and kept, and without dropout
    the values and gradients are those of the whole attention."""
    from entangle.modeling import coattention

    torch.manual_seed(0)
    model, _ = tiny_model(m=1, alignment_bias=alignment_bias)
    block = model.entangle.coattention.char_layers[0].cross.train()
    x, context = torch.randn(2, 9, WIDTH), torch.randn(2, 5, WIDTH)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    alignment = torch.rand(2, 9, 5) > 0.5 if alignment_bias else None
    q, k, v = torch.randn(2, 2, 9, 4, requires_grad=True), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4)
    assert coattention._query_slice(q, k, dropout=0.1) is None  # 180 scores: whole
    monkeypatch.setattr(coattention, "CHUNKED_ATTENTION_SCORES", 80)
    assert coattention._query_slice(q, k, dropout=0.1) == 4  # 20 scores a query
    assert coattention._query_slice(q, k, dropout=0.0) is None  # the fused kernel keeps no scores
    with torch.no_grad():
        assert coattention._query_slice(q, k, dropout=0.1) is None

    def gradient(attend) -> tuple[torch.Tensor, torch.Tensor]:
        q.grad = None
        torch.manual_seed(1)
        out = attend()
        out.square().sum().backward()
        return out.detach(), q.grad.clone()

    def kept_slices(dropout: float) -> torch.Tensor:
        slices = [alignment[:, start:start + 4] if alignment_bias else None for start in (0, 4, 8)]
        return torch.cat([block._attend(q[:, :, start:start + 4], k, v, mask, part, dropout)
                          for start, part in zip((0, 4, 8), slices)], dim=2)

    sliced = gradient(lambda: block._attend_in_slices(q, k, v, mask, alignment, 0.1, 4))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(sliced, gradient(lambda: kept_slices(0.1))))
    whole = gradient(lambda: block._attend(q, k, v, mask, alignment, 0.0))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(whole, gradient(
        lambda: block._attend_in_slices(q, k, v, mask, alignment, 0.0, 4))))
    block(x, context, mask, alignment).sum().backward()  # the block itself takes the sliced path
    assert block.query.weight.grad is not None


def test_both_sides_loss_is_the_sum_of_the_two_losses():
    model, tokenizer = tiny_model(m=1)
    batch = batch_for(model, tokenizer, SENTENCES)
    batch["labels"] = torch.where(batch["subword_mask"][:, : batch["char_word_starts"].shape[1]] > 0, 1, -100)
    out = model(**batch)
    ce = torch.nn.functional.cross_entropy
    expected = sum(ce(x.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100) for x in (out.subword_logits, out.char_logits))
    assert torch.allclose(out.loss, expected)


@pytest.mark.parametrize("m", [1, 2])
def test_isolated_sides_train_each_side_by_its_own_loss_only(m):
    """Same forward pass; the subword loss reaches no character-side parameter and the character
    loss no subword-side one (without isolation, each reaches the other side's encoder)."""
    torch.manual_seed(0)
    model, tokenizer = tiny_model(m=m, isolate_sides=False)  # in eval mode: no dropout
    isolated = EntangleForTokenClassification(EntangleConfig(**{**model.config.to_dict(), "isolate_sides": True})).eval()
    isolated.load_state_dict(model.state_dict())
    batch = batch_for(model, tokenizer, SENTENCES)
    out, out_isolated = model(**batch), isolated(**batch)
    assert torch.equal(out.subword_logits, out_isolated.subword_logits) and torch.equal(out.char_logits, out_isolated.char_logits)

    def reached(net, side: str) -> set[str]:
        net.zero_grad()
        getattr(net(**batch), f"{side}_logits").square().sum().backward()
        return {name.split(".")[1] + ("." + name.split(".")[2] if name.startswith("entangle.coattention") else "")
                for name, p in net.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}

    assert {"char_encoder", "coattention.char_layers"}.isdisjoint(reached(isolated, "subword"))
    assert {"subword_encoder", "coattention.subword_layers"}.isdisjoint(reached(isolated, "char"))
    assert "char_encoder" in reached(model, "subword") and "subword_encoder" in reached(model, "char")
    with pytest.raises(ValueError, match="isolate_sides .* needs side='both'"):
        EntangleConfig(**{**model.config.to_dict(), "isolate_sides": True, "side": "subword"})


def test_sides_are_isolated_by_default_when_both_heads_train_through_coattention():
    config = tiny_model(m=1)[0].config.to_dict()
    del config["isolate_sides"], config["predict_side"]
    defaults = {(side, m): EntangleConfig(**{**config, "side": side, "num_coattention_layers": m}).isolate_sides
                for side in ("both", "subword", "char") for m in (0, 1)}
    assert defaults == {("both", 1): True, **{key: False for key in defaults if key != ("both", 1)}}


@pytest.mark.parametrize("char", ["builtin", "canine"])
def test_save_and_load_give_identical_logits(tmp_path, char):
    model, tokenizer = tiny_model(m=2, char=char)
    tagger = Tagger(model, tokenizer)
    before = tagger.probabilities(SENTENCES)
    tagger.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file() and not list(tmp_path.glob("*.bin"))
    loaded = Tagger.from_pretrained(tmp_path, device=tagger.model.device)  # the same device: bit-identical
    after = loaded.probabilities(SENTENCES)
    for side in before:
        for a, b in zip(before[side], after[side]):
            assert torch.equal(a, b)
    assert loaded.model.config.char_config.model_type == ("canine" if char == "canine" else "entangle-char")


@pytest.mark.parametrize("side", ["both", "char"])
def test_canine_tags_a_one_character_sentence_alone(side):
    """CANINE pools every 4 characters; "!" between its markers is 3, alone in its batch."""
    tagger = Tagger(*tiny_model(m=1 if side == "both" else 0, side=side, char="canine"))
    tagged = tagger.tag([["!"], ["a"]])
    assert [len(t.labels) for t in tagged] == [1, 1]
    # The padding that makes room for the pooling is cut from the states again.
    assert tagger.probabilities([["!"]])["char"][0].shape == (1, len(LABELS))


def test_builtin_char_encoder_round_trips_as_a_standalone_model(tmp_path):
    encoder = CharEncoderModel(CharEncoderConfig(hidden_size=16, embedding_size=8, num_hash_buckets=64)).eval()
    ids = torch.tensor([[0xE000, ord("é"), ord("😀"), 0xE001]])
    encoder.save_pretrained(tmp_path)
    from transformers import AutoModel

    loaded = AutoModel.from_pretrained(tmp_path)
    assert isinstance(loaded, CharEncoderModel)
    assert torch.equal(encoder(ids).last_hidden_state, loaded(ids).last_hidden_state)


@pytest.mark.parametrize("layers", [1, 2])
def test_builtin_char_encoder_equals_a_packed_bilstm(layers):
    """Running each direction over the sentence's own length (exportable) gives what packing gives."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    encoder = CharEncoderModel(CharEncoderConfig(hidden_size=16, embedding_size=8, num_hash_buckets=64,
                                                 num_hidden_layers=layers)).eval()
    lengths = torch.tensor([9, 3, 1, 6])
    mask = (torch.arange(9) < lengths[:, None]).long()
    ids = torch.randint(1, 5000, (4, 9)) * mask
    packed = pack_padded_sequence(encoder.embed(ids), lengths, batch_first=True, enforce_sorted=False)
    expected, _ = pad_packed_sequence(encoder.lstm(packed)[0], batch_first=True, total_length=9)
    assert torch.allclose(encoder(ids, mask).last_hidden_state, expected, atol=1e-6)


def test_config_rejects_inconsistent_sides():
    with pytest.raises(ValueError, match="predict_side"):
        EntangleConfig(subword_config={"model_type": "bert"}, char_config={"model_type": "entangle-char"},
                       side="subword", predict_side="char")
    with pytest.raises(ValueError, match="character encoder"):
        EntangleConfig(subword_config={"model_type": "bert"}, num_coattention_layers=1)


def test_registered_with_auto_classes(tmp_path):
    from transformers import AutoConfig, AutoModelForTokenClassification

    model, _ = tiny_model(m=1)
    model.save_pretrained(tmp_path)
    assert isinstance(AutoConfig.from_pretrained(tmp_path), EntangleConfig)
    assert isinstance(AutoModelForTokenClassification.from_pretrained(tmp_path), EntangleForTokenClassification)


def test_same_seed_same_metrics(tmp_path):
    """A fixed seed reproduces the training run exactly on the same machine."""
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"]),
                 Sentence(["lol", "sooo", "good"], ["O", "O", "O"])] * 4
    results = []
    for run in range(2):
        torch.manual_seed(0)
        model, tokenizer = tiny_model(m=1)
        torch.manual_seed(run)  # different global state before training: the seed must override it
        config = TrainingConfig(output_dir=str(tmp_path / str(run)), epochs=2, batch_size=3, seed=7)
        train(Tagger(model, tokenizer), sentences, sentences, config)
        results.append((tmp_path / str(run) / "metrics.jsonl").read_text())
    strip = lambda text: [{k: v for k, v in json.loads(line).items() if k != "elapsed_s"} for line in text.splitlines()]
    assert strip(results[0]) == strip(results[1])


def _killed_at_training_batch(n: int):
    """A forward hook that interrupts training at its ``n``-th training batch (dev batches not counted)."""
    seen = {"batches": 0}

    def hook(module, inputs, output):
        seen["batches"] += module.training
        if seen["batches"] == n:
            raise KeyboardInterrupt("killed")
    return hook


def test_a_head_that_labels_every_dev_word_alike_is_reported_once(tmp_path):
    """A collapsed head (every dev word one label) is recorded each epoch and warned of once."""
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"])] * 4
    model, tokenizer = tiny_model(m=1, side="both")
    head = model.classifiers["char"]
    with torch.no_grad():  # the character head says O whatever it reads, and the rates barely move it
        head.weight.zero_()
        head.bias.copy_(torch.tensor([100.0 if label == "O" else 0.0 for label in LABELS]))
    config = TrainingConfig(output_dir=str(tmp_path), epochs=3, batch_size=2, lr=1e-9, new_lr=1e-9)
    killing = model.register_forward_hook(_killed_at_training_batch(5))  # the first of epoch 3
    with pytest.warns(UserWarning, match=r"after epoch 1 the char head labels every dev word 'O': it has not begun "
                                         r"to learn, or has collapsed; if it stays so, try a --new-lr below 1e-09$") as caught, \
            pytest.raises(KeyboardInterrupt):
        train(Tagger(model, tokenizer), sentences, sentences, config)
    killing.remove()
    assert sum("collapsed" in str(w.message) for w in caught) == 1
    with warnings.catch_warnings(record=True) as caught:  # resumed in its third epoch: reported already
        warnings.simplefilter("always")
        train(Tagger(model, tokenizer), sentences, sentences, replace(config, resume=True))
    assert not [w for w in caught if "collapsed" in str(w.message)]
    log = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [record.get("collapsed") for record in log] == [{"char": "O"}] * 3


def test_a_run_whose_weights_become_nan_ends_with_its_best_model_or_stops(tmp_path):
    """Without a dev set a NaN training loss never counted as better, and the run went on saying
    nothing (with no model at all if it diverged in its first epoch)."""
    from entangle.data.conll import Sentence
    from entangle.options import DivergedError
    from entangle.options import CHECKPOINT_DIR
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"])] * 4
    model, tokenizer = tiny_model(m=1)
    config = TrainingConfig(output_dir=str(tmp_path / "run"), epochs=3, batch_size=2, patience=0)
    killing = model.register_forward_hook(_killed_at_training_batch(3))  # the first of epoch 2
    with pytest.raises(KeyboardInterrupt):
        train(Tagger(model, tokenizer), sentences, None, config)
    killing.remove()
    saved = (tmp_path / "run" / CHECKPOINT_DIR / "model.safetensors").read_bytes()
    nan = model.classifiers["subword"].register_forward_hook(lambda module, inputs, output: output * float("nan"))
    with pytest.warns(UserWarning, match=r"training diverged in epoch 2 \(by step 4\): the weights are NaN or infinite; "
                                         r"the run ends with its best model, of epoch 1 \(a lower --lr"):
        summary = train(Tagger(model, tokenizer), sentences, None, replace(config, resume=True))
    assert summary["diverged"] == {"epoch": 2, "step": 4} and summary["best_epoch"] == 1
    assert "Training diverged in epoch 2 (by step 4" in (tmp_path / "run" / "model" / "README.md").read_text()
    assert (tmp_path / "run" / CHECKPOINT_DIR / "model.safetensors").read_bytes() == saved  # epoch 1's
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 1
    fresh, _ = tiny_model(m=1)  # diverged in its first epoch: nothing to end with
    fresh.classifiers["subword"].register_forward_hook(lambda module, inputs, output: output * float("nan"))
    with pytest.raises(DivergedError, match=r"training diverged in epoch 1 \(by step 2\): .*, and no epoch was kept"):
        train(Tagger(fresh, tokenizer), sentences, None, replace(config, output_dir=str(tmp_path / "fresh")))
    nan.remove()


def test_an_epochs_short_last_accumulation_group_is_a_mean_over_its_own_batches(tmp_path, monkeypatch):
    """Accelerate divides each batch's loss by the accumulation steps: a last group of one batch in
    two trained at half its weight."""
    from accelerate import Accelerator

    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    passed, computed = [], []
    backward = Accelerator.backward
    monkeypatch.setattr(Accelerator, "backward",
                        lambda self, loss, **kwargs: (passed.append(loss.item()), backward(self, loss, **kwargs))[1])
    model, tokenizer = tiny_model(m=1)
    forward = model.forward

    def recorded(*args, **kwargs):
        out = forward(*args, **kwargs)
        computed.append(out.loss.item())
        return out

    model.forward = recorded
    sentences = [Sentence(["Peter", "lives"], ["B-PER", "O"])] * 3  # three batches of one: groups of two and one
    train(Tagger(model, tokenizer), sentences, None, TrainingConfig(output_dir=str(tmp_path), epochs=1, batch_size=1,
                                                                     gradient_accumulation_steps=2, patience=0))
    assert passed == pytest.approx([computed[0], computed[1], 2 * computed[2]])


def test_every_epoch_is_trained_whole_when_its_noisy_copy_cuts_more_windows(tmp_path):
    """The step budget came from the clean copy: noise that lengthens words cut more windows, and
    the third epoch never ran (the summary said two, with no word of why)."""
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    words = "Peter lives in New York and Anna sings in Paris every day".split()
    sentences = [Sentence(words, ["B-PER", "O", "O", "B-LOC", "I-LOC", "O", "B-PER", "O", "O", "B-LOC", "O", "O"])] * 4
    tagger = Tagger(*tiny_model(m=1, max_chars=40))
    clean = len(tagger.featurizer.featurize([s.words for s in sentences]))
    summary = train(tagger, sentences, sentences[:1], TrainingConfig(
        output_dir=str(tmp_path), epochs=3, batch_size=2, patience=0, train_noise=1.0,
        train_noise_attacks=("add", "repeat"), train_lowercase=0.0))
    assert summary["epochs"] == 3 and summary["steps"] > 3 * clean // 2  # the copies' windows, more than the clean ones'
    assert [json.loads(line)["epoch"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]


def test_a_saved_built_in_encoder_keeps_its_rate_when_the_directory_it_came_from_is_gone(tmp_path):
    """The kind was read from the encoder's path: gone, the BiLSTM was taken for a transformer and
    would have fine-tuned at --lr, a tenth of its rate."""
    from entangle.training import character_rate
    from tiny import char_encoder, subword_encoder

    char_encoder("builtin").save_pretrained(tmp_path / "char")
    subword, tokenizer = subword_encoder("bert")
    subword.save_pretrained(tmp_path / "subword")
    tokenizer.save_pretrained(tmp_path / "subword")
    tagger = Tagger.create(str(tmp_path / "char"), str(tmp_path / "subword"), LABELS, coattention_layers=1)
    tagger.save_pretrained(tmp_path / "saved")
    (tmp_path / "char" / "config.json").unlink()
    config = Tagger.from_pretrained(tmp_path / "saved", device="cpu").model.config
    assert character_rate(config, 5e-5, None) == character_rate(tagger.model.config, 5e-5, None) == 5e-4


def test_one_label_everywhere_is_no_collapse_where_the_gold_has_one_label_only():
    from entangle.training import collapsed_heads

    predicted = {"subword": [["O", "O"], ["O"]], "char": [["O", "B-PER"], ["O"]]}
    assert collapsed_heads(predicted, {"O", "B-PER"}) == {"subword": "O"}
    assert collapsed_heads(predicted, {"O"}) == {}


def _weights(model):
    """A CPU copy of the weights: training leaves the model on the GPU when there is one."""
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("group_by_length, train_noise, train_lowercase, lr_schedule, build, killed_at",
                         [(True, 0.0, 0.0, "linear", tiny_model, 8), (False, 0.0, 0.0, "linear", tiny_model, 8),
                          (True, 0.5, 0.0, "linear", tiny_model, 8), (True, 0.0, 0.5, "linear", tiny_model, 8),
                          (True, 0.0, 0.0, "plateau", tiny_model, 8),
                          # CharBERT-style's BiGRU: its checkpoint once lost the GRU's weights on CUDA.
                          (True, 0.0, 0.0, "linear", charbert_model, 8),
                          # In epoch 2's first batch: resumed from epoch 1's closing checkpoint, which
                          # once drew epoch 1's batch order again.
                          (False, 0.0, 0.0, "linear", tiny_model, 6)])
def test_interrupted_training_resumes_exactly(tmp_path, group_by_length, train_noise, train_lowercase, lr_schedule,
                                              build, killed_at):
    """Killed after a checkpoint, resumed: same log and same weights as an uninterrupted run."""
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"]),
                 Sentence(["lol", "sooo", "good", "!"], ["O", "O", "O", "O"]),
                 Sentence(["Anna"], ["B-PER"])] * 3

    def fresh():
        torch.manual_seed(0)
        return Tagger(*build())  # m=1 for the entanglement model

    def options(name):
        return dict(output_dir=str(tmp_path / name), epochs=3, batch_size=2, seed=3, save_steps=2, patience=0,
                    group_by_length=group_by_length, train_noise=train_noise, train_lowercase=train_lowercase,
                    lr_schedule=lr_schedule)

    reference = fresh()
    train(reference, sentences, sentences[:3], TrainingConfig(**options("reference")))

    interrupted = fresh()
    # 5 training batches an epoch: the 8th is mid epoch 2, the 6th its first.
    interrupted.model.register_forward_hook(_killed_at_training_batch(killed_at))
    with pytest.raises(KeyboardInterrupt):
        train(interrupted, sentences, sentences[:3], TrainingConfig(**options("resumed")))
    resumed = fresh()
    train(resumed, sentences, sentences[:3], TrainingConfig(**options("resumed"), resume=True))

    def log(name):
        lines = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        return [{k: v for k, v in json.loads(line).items() if k != "elapsed_s"} for line in lines]

    assert log("resumed") == log("reference") and len(log("reference")) == 3
    expected, actual = _weights(reference.model), _weights(resumed.model)
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.equal(expected[name], actual[name]), name


def test_training_reads_the_summed_loss_only_when_it_needs_it(tmp_path, monkeypatch):
    """Reading a loss waits for the GPU; read every batch, it kept the host from collating the next
    batch while the GPU computed. The epoch's loss is read at its end (and when the bar is drawn),
    the sum the same as read batch by batch."""
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"]),
                 Sentence(["lol", "sooo", "good", "!"], ["O", "O", "O", "O"])] * 6
    losses, reads = [], []
    item = torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "item", lambda self: reads.append(self.dim()) or item(self))
    model, tokenizer = tiny_model(m=1)
    model.register_forward_hook(lambda module, inputs, output: losses.append(item(output.loss.detach().double())))
    train(Tagger(model, tokenizer), sentences, None, TrainingConfig(output_dir=str(tmp_path), epochs=1, batch_size=2))
    assert len(losses) == 6 and len(reads) < len(losses), reads
    record = json.loads((tmp_path / "metrics.jsonl").read_text())
    assert record["train_loss"] == sum(losses) / 6


def test_training_batches_reach_a_gpu_from_pinned_memory_without_waiting(tmp_path, monkeypatch):
    """On CUDA the loader pins its batches and Accelerate copies them without waiting, so the host
    goes on while the copy runs; elsewhere nothing is pinned (CPU tensors need no copy)."""
    from accelerate import Accelerator
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    seen = []
    prepare = Accelerator.prepare

    def recording(self, *objects):
        seen.extend((self.device.type, o.pin_memory, self.dataloader_config.non_blocking)
                    for o in objects if isinstance(o, torch.utils.data.DataLoader))
        return prepare(self, *objects)

    monkeypatch.setattr(Accelerator, "prepare", recording)
    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"])] * 2
    model, tokenizer = tiny_model(m=1)
    train(Tagger(model, tokenizer), sentences, None, TrainingConfig(output_dir=str(tmp_path), epochs=1, batch_size=2))
    assert [(pinned, non_blocking) for _, pinned, non_blocking in seen] == [(seen[0][0] == "cuda", True)], seen


def test_a_resumed_run_goes_on_with_the_options_it_started_with(tmp_path):
    """Resumed from the API with another epoch count, rate or batch size, a run changed its linear
    schedule's length mid-run, ignored the rates (the checkpoint's came back) or skipped batches it
    had not trained on, silently; it is refused, naming what differs. A rate left to its default is
    the one the run started with."""
    from entangle.data.conll import Sentence
    from entangle.options import UsageError
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"])] * 4
    model, tokenizer = tiny_model(m=1)
    config = TrainingConfig(output_dir=str(tmp_path), epochs=2, batch_size=2, new_lr=1e-3)
    killing = model.register_forward_hook(_killed_at_training_batch(3))
    with pytest.raises(KeyboardInterrupt):
        train(Tagger(model, tokenizer), sentences, None, config)
    killing.remove()
    recorded = (tmp_path / "training_config.json").read_text()
    with pytest.raises(UsageError, match=r"a resumed run goes on with the options it started with, and these differ "
                                         r"from those in its training_config.json: epochs 2 -> 4, batch_size 2 -> 4; give "
                                         r"them as recorded, or train anew in another output directory$"):
        train(Tagger(model, tokenizer), sentences, None, replace(config, epochs=4, batch_size=4, resume=True))
    assert (tmp_path / "training_config.json").read_text() == recorded
    # As an older version recorded it: rates unresolved, patience None for 0; save_steps only places checkpoints.
    older = {**json.loads(recorded), "char_lr": None, "patience": None, "save_steps": 7}
    (tmp_path / "training_config.json").write_text(json.dumps(older))
    summary = train(Tagger(model, tokenizer), sentences, None, replace(config, new_lr=None, resume=True))
    assert summary["epochs"] == 2 and json.loads((tmp_path / "training_config.json").read_text())["new_lr"] == 1e-3


def test_an_epoch_cut_by_max_steps_is_reported_as_cut(tmp_path):
    """The last epoch, ended by max_steps before its last batch, was counted as an epoch trained."""
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"])] * 10
    model, tokenizer = tiny_model(m=1)
    summary = train(Tagger(model, tokenizer), sentences, sentences[:2],
                    TrainingConfig(output_dir=str(tmp_path), epochs=3, batch_size=2, max_steps=8))
    assert summary["epochs"] == 2 and summary["last_epoch_cut"] == {"batches": 3, "of": 5}
    log = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [record.get("cut") for record in log] == [None, {"batches": 3, "of": 5}]
    assert "the last cut by max_steps after 3 of its 5 batches" in (tmp_path / "model" / "README.md").read_text()
    full = train(Tagger(*tiny_model(m=1)), sentences, sentences[:2],
                 TrainingConfig(output_dir=str(tmp_path / "full"), epochs=3, batch_size=2, max_steps=10))
    assert "last_epoch_cut" not in full  # max_steps at an epoch's last batch cuts nothing
    diverging, _ = tiny_model(m=1)
    seen = {"batches": 0}

    def nan_from_the_seventh_batch(module, inputs, output):
        seen["batches"] += module.training
        return output * float("nan") if seen["batches"] >= 7 else output

    diverging.classifiers["subword"].register_forward_hook(nan_from_the_seventh_batch)
    with pytest.warns(UserWarning, match=r"training diverged in epoch 2 \(by step 8\)"):
        ended = train(Tagger(diverging, tokenizer), sentences, sentences[:2],
                      TrainingConfig(output_dir=str(tmp_path / "diverged"), epochs=3, batch_size=2, max_steps=8))
    assert ended["diverged"] == {"epoch": 2, "step": 8} and "last_epoch_cut" not in ended  # diverged, not cut


def test_pretrained_encoders_train_with_lr_and_everything_new_with_new_lr():
    from entangle.training import parameter_groups

    model, _ = tiny_model(m=1)
    model.config.subword_encoder_pretrained = True  # as if loaded with from_pretrained
    model.config.char_encoder_pretrained = False  # the built-in encoder from scratch
    groups = parameter_groups(model, lr=1e-5, new_lr=1e-3, weight_decay=0.01)
    lr_of = {id(p): (g["lr"], g["weight_decay"]) for g in groups for p in g["params"]}
    for name, param in model.named_parameters():
        expected_lr = 1e-5 if name.startswith("entangle.subword_encoder.") else 1e-3
        assert lr_of[id(param)][0] == expected_lr, name
        assert lr_of[id(param)][1] == (0.01 if param.ndim >= 2 else 0.0), name
    assert len(lr_of) == len(list(model.parameters()))
    groups = parameter_groups(model, lr=1e-5, new_lr=1e-3, weight_decay=0.01, char_lr=3e-4)
    lr_of = {id(p): g["lr"] for g in groups for p in g["params"]}
    for name, param in model.named_parameters():
        expected_lr = {"entangle.subword_encoder.": 1e-5, "entangle.char_encoder.": 3e-4}.get(".".join(name.split(".")[:2]) + ".", 1e-3)
        assert lr_of[id(param)] == expected_lr, name


@pytest.mark.parametrize("name, char_type, expected", [
    (None, "entangle-char", 1e-3), (None, "canine", 1e-5),  # an encoder given without a name: its config
    ("builtin-en", "entangle-char", 1e-3), ("google/canine-s", "canine", 1e-5),  # by name, as entangle train
])
def test_a_pretrained_character_encoder_trains_at_new_lr_if_built_in_else_at_lr(name, char_type, expected):
    """The shipped BiLSTM is small and briefly pretrained: it learns at the new layers' rate; a
    pretrained transformer (CANINE) fine-tunes gently, like the subword encoder."""
    from entangle.training import parameter_groups

    model, _ = tiny_model(m=1)
    model.config.char_encoder_pretrained = True
    model.config.char_encoder_name = name
    model.config.char_config.model_type = char_type  # only the type is read
    groups = parameter_groups(model, lr=1e-5, new_lr=1e-3, weight_decay=0.01)
    rates = {g["lr"] for g in groups for p in g["params"] if any(p is q for q in model.entangle.char_encoder.parameters())}
    assert rates == {expected}


@pytest.mark.parametrize("m", [0, 1])
def test_frozen_subword_embeddings_stay_fixed_and_everything_else_trains(tmp_path, m):
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"])] * 4
    torch.manual_seed(0)
    model, tokenizer = tiny_model(m=m)
    before = _weights(model)
    config = TrainingConfig(output_dir=str(tmp_path), epochs=1, batch_size=2, patience=0, freeze_subword_embeddings=True)
    train(Tagger(model, tokenizer), sentences, None, config)
    frozen = "entangle.subword_encoder.embeddings.word_embeddings.weight"
    after = _weights(model)
    assert torch.equal(after[frozen], before[frozen])
    changed = {name for name, weight in after.items() if not torch.equal(weight, before[name])}
    assert "entangle.subword_encoder.embeddings.position_embeddings.weight" in changed
    assert any(name.startswith("entangle.subword_encoder.encoder.") for name in changed)


def test_the_plateau_schedule_warms_up_then_halves_the_rates_after_each_epoch_without_a_dev_gain(tmp_path):
    from entangle.data.conll import Sentence
    from entangle.options import CHECKPOINT_DIR
    from entangle.training import LoopState, TrainingConfig, _halving_after_warmup, train

    state = LoopState(torch.Generator())
    factor = _halving_after_warmup(4, state)
    assert [factor(step) for step in (0, 2, 4, 9)] == [0.0, 0.5, 1.0, 1.0]
    state.lr_halvings = 2
    assert factor(9) == 0.25
    assert _halving_after_warmup(0, LoopState(torch.Generator()))(0) == 1.0  # no warm-up: the first step trains
    sentences = [Sentence(["Peter", "lives", "in", "New", "York"], ["B-PER", "O", "O", "B-LOC", "I-LOC"]),
                 Sentence(["Anna"], ["B-PER"])] * 4
    tagger = Tagger(*tiny_model(m=1))
    flat = {"f1": 0.5, "precision": 0.5, "recall": 0.5}

    def evaluate(examples, *args, return_predictions=False, **kwargs):  # the same dev scores after every epoch
        metrics = {side: flat for side in tagger.model.config.trained_sides}
        return (metrics, {side: [e.tags for e in examples] for side in metrics}) if return_predictions else metrics

    tagger.evaluate = evaluate
    train(tagger, sentences, sentences[:2], TrainingConfig(output_dir=str(tmp_path), epochs=3, batch_size=2, patience=0,
                                                           lr=1e-4, new_lr=1e-3, lr_schedule="plateau"))
    checkpoint = tmp_path / CHECKPOINT_DIR
    # Epochs 2 and 3 brought no gain: epoch 3 trained at half the rates; a fourth would train at a
    # quarter from its first step.
    assert torch.load(checkpoint / "custom_checkpoint_0.pkl", weights_only=False)["lr_halvings"] == 2
    rates = {group["lr"] for group in torch.load(checkpoint / "optimizer.bin", weights_only=False)["param_groups"]}
    assert rates == {2.5e-4}  # the tiny encoders are built from configs, not pretrained: all at new_lr


def test_the_loop_state_carries_the_peak_memory_over_a_resume():
    from entangle.training import LoopState

    state = LoopState(torch.Generator())
    state.peak_memory_mb = 5000.0  # the interrupted process's peak
    resumed = LoopState(torch.Generator())
    resumed.load_state_dict(state.state_dict())
    assert resumed.peak_memory_mb == 5000.0
    older = LoopState(torch.Generator())  # a checkpoint written before the field existed
    older.load_state_dict({k: v for k, v in state.state_dict().items() if k != "peak_memory_mb"})
    assert older.peak_memory_mb == 0.0 and older.epoch == state.epoch


def featurized_per_epoch(tmp_path, tagger, sentences, **options) -> list[tuple]:
    """Train 2 epochs; each featurizing call's words and labels: the clean windows, then one copy per epoch."""
    from entangle.training import TrainingConfig, train

    seen = []
    featurize = tagger.featurizer.featurize

    def spy(words, labels=None):
        seen.append(([list(w) for w in words], labels))
        return featurize(words, labels)

    tagger.featurizer.featurize = spy
    train(tagger, sentences, None, TrainingConfig(output_dir=str(tmp_path / "run"), epochs=2, batch_size=4, **options))
    return seen


def test_train_noise_draws_a_new_noisy_copy_each_epoch_with_the_labels_kept(tmp_path):
    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    sentences = [Sentence(["Peter", "lives", "in", "Berlin", "today"], ["B-PER", "O", "O", "B-LOC", "O"]),
                 Sentence(["Annabel", "sings", "loudly"], ["B-PER", "O", "O"])] * 4
    seen = featurized_per_epoch(tmp_path, Tagger(*tiny_model(m=1)), sentences, train_noise=1.0,
                                train_noise_attacks=("swap", "lower"))
    clean, first, second = (words for words, _ in seen)  # the clean windows, then one copy per epoch
    assert clean == [s.words for s in sentences] and first != clean and second != first
    assert all(len(a) == len(b) for a, b in zip(first, clean)) and any(w.islower() and w != w0.lower()
                                                                     for s, s0 in zip(second, clean) for w, w0 in zip(s, s0))
    assert seen[0][1] == seen[1][1] == seen[2][1]  # labels unchanged
    from entangle.data.intraword import CharTaggedSentence

    with pytest.raises(ValueError, match="train_noise changes characters"):
        train(Tagger(*tiny_model(m=1, side="char", task="char-tagging", labels=["A", "B"])),
              [CharTaggedSentence(["ab"], [["A", "B"]], [True])], None,
              TrainingConfig(output_dir=str(tmp_path / "chars"), train_noise=0.5))


def test_an_epochs_noisy_copy_is_freed_once_the_next_is_drawn(tmp_path):
    """Memory stays at two featurized copies however many epochs run (not one more per epoch)."""
    import gc
    import weakref

    from entangle.data.conll import Sentence
    from entangle.training import TrainingConfig, train

    class Windows(list):  # a list that takes weak references
        pass

    copies, alive_at_each_draw = [], []
    tagger = Tagger(*tiny_model(m=1))
    featurize = tagger.featurizer.featurize

    def spy(words, labels=None):
        gc.collect()
        alive_at_each_draw.append([copy() is not None for copy in copies])
        windows = Windows(featurize(words, labels))
        copies.append(weakref.ref(windows))
        return windows

    tagger.featurizer.featurize = spy
    sentences = [Sentence(["Peter", "lives", "in", "Berlin"], ["B-PER", "O", "O", "B-LOC"])] * 8
    train(tagger, sentences, None, TrainingConfig(output_dir=str(tmp_path), epochs=3, batch_size=4, train_noise=0.5))
    # The clean windows, then epochs 1-3: when a copy is drawn, only the one before it is still held.
    assert alive_at_each_draw == [[], [True], [False, True], [False, False, True]]


@pytest.mark.parametrize("task", ["ner", "char-tagging"])
def test_train_lowercase_lowers_a_fresh_share_of_examples_each_epoch_with_the_labels_kept(tmp_path, task):
    from entangle.data.conll import Sentence
    from entangle.data.intraword import CharTaggedSentence

    texts = [["Peter", "lives", "in", "Berlin"], ["Annabel", "Sings"], ["NASA", "launches", "Artemis"]] * 4
    if task == "ner":
        sentences = [Sentence(words, ["B-PER" if w[0].isupper() else "O" for w in words]) for words in texts]
        tagger = Tagger(*tiny_model(m=1))
    else:  # per-character labels: lower-casing keeps every word's length
        sentences = [CharTaggedSentence(words, [["A" if c.isupper() else "B" for c in w] for w in words],
                                        [False] * len(words)) for words in texts]
        tagger = Tagger(*tiny_model(m=1, side="char", task="char-tagging", labels=["A", "B"]))
    seen = featurized_per_epoch(tmp_path, tagger, sentences, train_lowercase=0.5)
    clean, first, second = (words for words, _ in seen)  # the clean windows, then one copy per epoch
    assert clean == texts
    for copy in first, second:
        lowered = [words for words, original in zip(copy, texts) if words != original]
        assert len(lowered) == 6 and all(words == [w.lower() for w in words] for words in lowered)
    assert first != second
    assert seen[0][1] == seen[1][1] == seen[2][1]  # labels unchanged


@pytest.mark.parametrize("task", ["ner", "classification"])
def test_the_joint_head_reads_both_sides_and_trains_beside_them(task):
    labels = ["neg", "pos"] if task == "classification" else LABELS
    torch.manual_seed(0)
    model, tokenizer = tiny_model(m=1, task=task, labels=labels, joint_head=True, predict_side="joint")
    assert model.config.trained_sides == ("subword", "char", "joint") and model.config.isolate_sides
    tagger = Tagger(model.train(), tokenizer)
    windows = tagger.featurizer.featurize([["Peter", "lives", "in", "Paris"]], [[0] if task == "classification" else [1, 0, 0, 1]])
    batch = tagger.collator(windows)
    out = model(**batch)
    assert out.joint_logits.shape == out.subword_logits.shape and torch.equal(out.logits, out.joint_logits)
    model.zero_grad()
    model(**batch, sides=("joint",)).loss.backward()  # beside the isolated sides: it trains only itself
    trained = {name.split(".")[0] + "." + name.split(".")[1] for name, p in model.named_parameters() if p.grad is not None
               and p.grad.abs().sum() > 0}
    assert trained == {"classifiers.joint"}
    with pytest.raises(ConfigError, match="the joint head reads both sides: it needs side='both'"):
        tiny_model(m=1, side="subword", joint_head=True)


@pytest.mark.parametrize("task", ["ner", "classification"])
def test_char_distill_teaches_the_character_head_from_the_joint_head_and_trains_only_the_character_side(task):
    labels = ["neg", "pos"] if task == "classification" else LABELS
    torch.manual_seed(0)
    model, tokenizer = tiny_model(m=1, task=task, labels=labels, joint_head=True, char_distill=0.5)
    assert model.config.joint_head and model.config.isolate_sides
    tagger = Tagger(model.eval(), tokenizer)  # eval: no dropout, so the two losses below see the same logits
    windows = tagger.featurizer.featurize([["Peter", "lives", "in", "Paris"], ["Bob"]],
                                          [[0], [1]] if task == "classification" else [[1, 0, 0, 1], [1]])
    batch = tagger.collator(windows)
    with_teacher = model(**batch)
    model.config.char_distill = 0.0
    plain = model(**batch)
    labelled = batch["labels"].flatten() != -100
    char, joint = (x.reshape(-1, x.shape[-1])[labelled] for x in (plain.char_logits, plain.joint_logits))
    expected = F.kl_div(F.log_softmax(char, -1), F.softmax(joint, -1), reduction="batchmean")
    assert expected > 0
    torch.testing.assert_close(with_teacher.loss - plain.loss, 0.5 * expected)
    model.zero_grad()
    (with_teacher.loss - plain.loss).backward()  # the distillation term alone
    trained = {name.rsplit(".", 1)[0] for name, p in model.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert any(name.startswith("classifiers.char") for name in trained)
    assert any(name.startswith("entangle.char_encoder") for name in trained)
    assert not [name for name in trained if "subword" in name or "joint" in name]


def test_char_distill_needs_both_sides_and_a_weight_of_at_least_zero():
    with pytest.raises(ConfigError, match="char_distill teaches the character head from the other heads: it needs side='both'"):
        tiny_model(m=1, side="char", char_distill=0.5)
    with pytest.raises(ConfigError, match="char_distill is a loss weight: it must be >= 0"):
        tiny_model(m=1, char_distill=-1.0)


def test_alignment_bias_starts_the_cross_attention_on_each_characters_own_subword_and_learns():
    from entangle.attention import cross_attention

    torch.manual_seed(0)
    plain, tokenizer = tiny_model(m=2)
    torch.manual_seed(0)
    biased, _ = tiny_model(m=2, alignment_bias=True)
    assert biased.config.uses_subword_char_spans
    blocks = [layer.cross for layers in (biased.entangle.coattention.char_layers,
                                         biased.entangle.coattention.subword_layers) for layer in layers]
    assert all(torch.equal(block.alignment_bias, torch.full((2,), 2.0)) for block in blocks)
    words = ["Peter", "lives", "in", "Paris"]

    def own_mass(model) -> float:
        attention = cross_attention(Tagger(model, tokenizer), words)
        inside = torch.tensor([[c == s and c is not None for s in attention.subword_words] for c in attention.char_words])
        return float((attention.char_to_subword[0].mean(0) * inside).sum() / inside.any(-1).sum())

    assert own_mass(biased) > 1.5 * own_mass(plain)  # the same weights otherwise
    tagger = Tagger(biased.train(), tokenizer)
    batch = tagger.collator(tagger.featurizer.featurize([words, ["Bob"]], [[1, 0, 0, 1], [1]]))
    biased(**batch).loss.backward()
    assert all(block.alignment_bias.grad is not None and block.alignment_bias.grad.abs().sum() > 0 for block in blocks)
    with pytest.raises(ConfigError, match="alignment_bias favours aligned pairs in the co-attention: it needs co-attention"):
        tiny_model(m=0, side="subword", alignment_bias=True)


def test_the_alignment_of_a_shortened_character_sequence_pairs_each_position_with_the_subwords_of_its_characters():
    from entangle.modeling.positional_alignment import char_subword_alignment

    starts, ends, mask = torch.tensor([[1, 4, 0]]), torch.tensor([[3, 6, 0]]), torch.tensor([[1, 1, 0]])
    every = char_subword_alignment(8, starts, ends, mask)[0].int().T.tolist()
    assert every == [[0, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 0], [0] * 8]  # per subword: its characters
    halved = char_subword_alignment(4, starts, ends, mask, stride=2)[0].int().T.tolist()
    assert halved == [[1, 1, 0, 0], [0, 0, 1, 1], [0] * 4]  # characters 0-1, 2-3, 4-5, 6-7
