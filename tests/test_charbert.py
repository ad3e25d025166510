"""The CharBERT-style baseline (``fusion="charbert"``): subword -> character spans, shapes, padding
invariance, learning, save/load, the command line, and configurations it cannot run."""

import json

import pytest
import torch
from test_cli import encoders, write_dataset  # noqa: F401  (the fixture)

from entangle.cli import main
from entangle.data.features import CHAR_CLS, CHAR_SEP, Featurizer
from entangle.modeling import CharBertModel, EntangleConfig
from entangle.options import ConfigError
from entangle.predict import Tagger
from entangle.training import parameter_groups
from tiny import LABELS, WIDTH, bytelevel_bpe_tokenizer, charbert_model, tiny_model, unigram_tokenizer, wordpiece_tokenizer

SENTENCES = [
    ["Empire", "State", "Building", "is", "in", "New", "York"],
    ["lol", "sooo", "gooood"],
    ["Naïve", "café", "owners", "in", "São", "Paulo", "love", "crème", "brûlée", "😀", "#blessed"],
]
ASCII = ["the", "quick", "brownish", "foxes", "jumped", "over", "lazy", "dogs", "@paulwalk", "it's", "#blessed"]


def batch_for(model, tokenizer, sentences):
    tagger = Tagger(model, tokenizer)
    return tagger.collator(tagger.featurizer.featurize(sentences))


# ------------------------------------------------------------------ subword -> character spans
def piece_texts(featurizer, window):
    """The characters each subword position points at, as text."""
    return ["".join(map(chr, window.char_ids[a : b + 1]))
            for a, b in zip(window.subword_char_starts, window.subword_char_ends)]


def test_wordpiece_pieces_point_at_their_own_characters():
    tokenizer = wordpiece_tokenizer()
    featurizer = Featurizer(tokenizer, None, 512, subword_char_spans=True)
    [window] = featurizer.featurize([ASCII])
    tokens = tokenizer.convert_ids_to_tokens(window.subword_ids)
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert (window.subword_char_starts[0], window.subword_char_ends[0]) == (0, 0)  # the start marker
    end = len(window.char_ids) - 1
    assert (window.subword_char_starts[-1], window.subword_char_ends[-1]) == (end, end)  # the end marker
    assert window.char_ids[0] == CHAR_CLS and window.char_ids[end] == CHAR_SEP
    texts = piece_texts(featurizer, window)
    assert any(t.startswith("##") for t in tokens), "the example must split some word into pieces"
    for token, text in zip(tokens[1:-1], texts[1:-1]):
        assert text.lower() == token.removeprefix("##"), (token, text)
    # each word's first subword starts at the word's first character
    for subword_start, char_start in zip(window.subword_word_starts, window.char_word_starts):
        assert window.subword_char_starts[subword_start] == char_start


def test_sentencepiece_pieces_point_at_their_own_characters():
    tokenizer = unigram_tokenizer()
    featurizer = Featurizer(tokenizer, None, 512, subword_char_spans=True)
    [window] = featurizer.featurize([ASCII])
    tokens = tokenizer.convert_ids_to_tokens(window.subword_ids)
    texts = piece_texts(featurizer, window)
    assert "▁" in tokens, "the example must have a lone word-start marker"
    for position, (token, text) in enumerate(zip(tokens[1:-1], texts[1:-1]), start=1):
        if token == "▁":  # a lone marker belongs to the next word and points at its first character
            assert window.subword_char_starts[position] == window.subword_char_ends[position] == window.subword_char_starts[position + 1]
        else:
            assert text == token.lstrip("▁"), (token, text)


def test_bytelevel_bpe_pieces_point_at_their_own_characters():
    tokenizer = bytelevel_bpe_tokenizer()
    featurizer = Featurizer(tokenizer, None, 512, subword_char_spans=True)
    [window] = featurizer.featurize([ASCII])
    texts = piece_texts(featurizer, window)
    for position, (piece, text) in enumerate(zip(window.subword_ids[1:-1], texts[1:-1]), start=1):
        expected = tokenizer.decode([piece]).strip()
        if expected:
            assert text == expected, (tokenizer.convert_ids_to_tokens([piece]), text)
        else:  # a lone space token (Ġ) belongs to the next word and points at its first character
            assert window.subword_char_starts[position] == window.subword_char_ends[position] == window.subword_char_starts[position + 1]


@pytest.mark.parametrize("tokenizer", [wordpiece_tokenizer, bytelevel_bpe_tokenizer, unigram_tokenizer])
def test_spans_stay_inside_their_word_in_every_window(tokenizer):
    """Tricky text, windows cut by the subword limit only: every span lies inside one word of its window."""
    words = (SENTENCES[2] + ["\u200b", "e\u0301cole", "👩\u200d👩\u200d👧", "東京"]) * 4
    featurizer = Featurizer(tokenizer(), None, 24, subword_char_spans=True)
    windows = featurizer.featurize([words])
    assert len(windows) > 1
    for window in windows:
        assert len(window.subword_char_starts) == len(window.subword_char_ends) == len(window.subword_ids)
        word_of = {}
        for k, start in enumerate(window.char_word_starts):
            for position in range(start, start + len(words[window.start + k])):
                word_of[position] = k
        special = len(featurizer.prefix)
        for first, last in zip(window.subword_char_starts[special:-1], window.subword_char_ends[special:-1]):
            assert first <= last and word_of[first] == word_of[last]
        # the word the normaliser drops gets the unknown token, pointing at the whole word
        for k, subword_start in enumerate(window.subword_word_starts):
            assert window.subword_char_starts[subword_start] == window.char_word_starts[k]


def test_spans_are_only_computed_when_the_model_reads_them():
    model, tokenizer = tiny_model(m=1)
    assert "subword_char_starts" not in batch_for(model, tokenizer, SENTENCES)
    model, tokenizer = charbert_model()
    batch = batch_for(model, tokenizer, SENTENCES)
    assert batch["subword_char_starts"].shape == batch["subword_char_ends"].shape == batch["subword_ids"].shape


# ------------------------------------------------------------------ the model
@pytest.mark.parametrize("family", ["bert", "roberta", "xlmr"])
def test_shapes_and_no_character_encoder(family):
    model, tokenizer = charbert_model(family)
    batch = batch_for(model, tokenizer, SENTENCES)
    out = model(**batch)
    assert out.logits.shape == (3, max(map(len, SENTENCES)), len(LABELS))
    assert out.char_logits is None and torch.equal(out.logits, out.subword_logits)
    base = model.entangle
    assert isinstance(base, CharBertModel) and model.config.char_config is None and not hasattr(base, "char_encoder")
    assert len(base.interactions) == len(base.subword_encoder.encoder.layer) == 2
    states = base(batch["char_ids"], batch["char_mask"], batch["subword_ids"], batch["subword_mask"],
                  batch["subword_char_starts"], batch["subword_char_ends"])
    assert states.subword_states.shape == (*batch["subword_ids"].shape, 2 * WIDTH)  # both channels
    assert model.classifiers["subword"].in_features == 2 * WIDTH


def test_the_character_channel_changes_the_prediction():
    """Same subwords, different characters: the logits differ (the character channel is read)."""
    model, tokenizer = charbert_model()
    batch = batch_for(model, tokenizer, SENTENCES)
    changed = dict(batch, char_ids=torch.where(batch["char_mask"] > 0, batch["char_ids"] + 1, batch["char_ids"]))
    assert not torch.allclose(model(**batch).logits, model(**changed).logits)


@pytest.mark.parametrize("family", ["bert", "roberta", "xlmr"])
def test_padding_invariance(family):
    """A longer sentence in the batch leaves the other sentences' logits unchanged."""
    model, tokenizer = charbert_model(family)
    short = SENTENCES[:2]
    batches = [batch_for(model, tokenizer, short), batch_for(model, tokenizer, short + [SENTENCES[2] * 2])]
    alone, padded = (model(**batch).logits for batch in batches)
    for row, words in enumerate(short):
        a, b = alone[row, : len(words)], padded[row, : len(words)]
        assert torch.allclose(a, b, atol=1e-5), (row, (a - b).abs().max())
    # The states of every real subword too (the logits of a random head hardly move: 1e-7 where
    # the states move by 1e-3 when padding leaks into the convolution).
    keys = ("char_ids", "char_mask", "subword_ids", "subword_mask", "subword_char_starts", "subword_char_ends")
    alone, padded = (model.entangle(*(batch[k] for k in keys)).subword_states for batch in batches)
    for row in range(len(short)):
        n = int(batches[0]["subword_mask"][row].sum())
        assert torch.allclose(alone[row, :n], padded[row, :n], atol=1e-5), (row, (alone[row, :n] - padded[row, :n]).abs().max())


def test_new_parts_train_with_the_new_layers_rate_the_encoder_with_its_own():
    model, _ = charbert_model(subword_encoder_pretrained=True)  # as if loaded from the hub
    groups = parameter_groups(model, lr=1e-5, new_lr=1e-3, weight_decay=0.01)
    rate = {id(p): g["lr"] for g in groups for p in g["params"]}
    for name, param in model.named_parameters():
        expected = 1e-5 if name.startswith("entangle.subword_encoder.") else 1e-3
        assert rate[id(param)] == expected, name


def test_loss_falls_on_a_toy_set():
    torch.manual_seed(0)
    model, tokenizer = charbert_model()
    model.train()
    batch = batch_for(model, tokenizer, SENTENCES)
    batch["labels"] = torch.where(batch["subword_word_starts"] > 0, 1, -100)
    batch["labels"][:, 0] = 3
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses


def test_save_and_load_give_identical_logits(tmp_path):
    from transformers import AutoModelForTokenClassification

    model, tokenizer = charbert_model("xlmr")
    tagger = Tagger(model, tokenizer)
    before = tagger.probabilities(SENTENCES)["subword"]
    tagger.save_pretrained(tmp_path)
    loaded = Tagger.from_pretrained(tmp_path, device=tagger.model.device)
    assert loaded.model.config.fusion == "charbert" and isinstance(loaded.model.entangle, CharBertModel)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.model.state_dict().values()))
    # The same weights; a loaded tensor's memory layout can pick another CPU kernel, which moves the
    # last bit of a float32 (seen: 1.5e-8), so the outputs are compared to float32 precision.
    for a, b in zip(before, loaded.probabilities(SENTENCES)["subword"]):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    assert isinstance(AutoModelForTokenClassification.from_pretrained(tmp_path).entangle, CharBertModel)
    assert [t.labels for t in loaded.tag(SENTENCES)] == [t.labels for t in tagger.tag(SENTENCES)]


# ------------------------------------------------------------------ configurations it cannot run
def test_bad_configurations_are_clear_errors():
    bert = {"model_type": "bert", "hidden_size": WIDTH, "num_attention_heads": 2}
    with pytest.raises(ConfigError, match=r"num_coattention_layers=0 \(-m 0\) and side='subword', got m=2"):
        EntangleConfig(subword_config=bert, fusion="charbert", side="subword")
    with pytest.raises(ConfigError, match="got m=0, side='both'"):
        EntangleConfig(subword_config=bert, char_config={"model_type": "entangle-char"}, fusion="charbert",
                       num_coattention_layers=0)
    with pytest.raises(ConfigError, match="BERT-like subword encoder"):
        EntangleConfig(subword_config={"model_type": "distilbert"}, fusion="charbert", num_coattention_layers=0,
                       side="subword")
    with pytest.raises(ConfigError, match="must be odd"):
        EntangleConfig(subword_config=bert, fusion="charbert", num_coattention_layers=0, side="subword",
                       fusion_kernel_size=4)
    with pytest.raises(ConfigError, match="fusion must be one of"):
        EntangleConfig(subword_config=bert, fusion="late", num_coattention_layers=0, side="subword")


# ------------------------------------------------------------------ command line
def test_cli_trains_evaluates_and_predicts(tmp_path, encoders):  # noqa: F811
    data = write_dataset(tmp_path / "data")
    out = tmp_path / "run"
    # -m 0 and --side subword are what --fusion charbert implies
    main(["train", "--data", str(data), "--subword", str(encoders / "subword"), "--fusion", "charbert",
          "--epochs", "2", "--batch-size", "4", "--output", str(out)])
    config = json.loads((out / "model" / "config.json").read_text())
    assert (config["fusion"], config["num_coattention_layers"], config["side"]) == ("charbert", 0, "subword")
    assert config["char_config"] is None
    assert "| fusion of characters and subwords | charbert |" in (out / "model" / "README.md").read_text()
    log = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [set(r["dev"]) for r in log] == [{"subword"}, {"subword"}]

    main(["evaluate", str(out), "--data", str(data), "--output", str(tmp_path / "test.json")])
    results = json.loads((tmp_path / "test.json").read_text())["results"]
    assert set(results) == {"subword"} and 0.0 <= results["subword"]["f1"] <= 1.0

    (tmp_path / "in.txt").write_text("Peter lives in New York.\n")
    main(["predict", str(out), "--input", str(tmp_path / "in.txt"), "--output-format", "jsonl",
          "--output", str(tmp_path / "out.jsonl")])
    [row] = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(row["labels"]) == len(row["words"]) == 6


def test_cli_rejects_coattention_with_charbert(tmp_path, encoders):  # noqa: F811
    data = write_dataset(tmp_path / "data")
    with pytest.raises(SystemExit, match="fusion='charbert'.*needs num_coattention_layers=0"):
        main(["train", "--data", str(data), "--subword", str(encoders / "subword"), "--fusion", "charbert",
              "-m", "1", "--output", str(tmp_path / "run")])


@pytest.mark.parametrize("grid", ["paper_grid.yaml", "tweebank_grid.yaml"])
def test_benchmark_grids_train_the_baseline_through_entangle_train(grid):
    from pathlib import Path

    from entangle.bench import BenchConfig, _options
    from entangle.cli import parse_args

    config = BenchConfig.from_file(Path(__file__).resolve().parent.parent / "benchmarks" / grid)
    arguments = _options(config.systems["CharBERT-style"])
    assert arguments == ["--fusion", "charbert", "--side", "subword"]
    args = parse_args(["train", "--data", "wnut17", "--output", "x", *arguments])
    assert (args.fusion, args.coattention_layers) == ("charbert", 0)  # resolved at parse time: no co-attention
