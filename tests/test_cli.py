"""The command line end to end on tiny encoders saved to directories (the local-directory loading path)."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from entangle.arguments import parse_args
from entangle.cli import main
from tiny import char_encoder, subword_encoder

TRAIN = "New\tB-LOC\nYork\tI-LOC\nis\tO\nbig\tO\n\nPeter\tB-PER\nlives\tO\nthere\tO\n\n" * 4
DEV = "Paris\tB-LOC\nis\tO\n\nAnna\tB-PER\nsings\tO\n"


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    root = tmp_path_factory.mktemp("encoders")
    model, tokenizer = subword_encoder("bert")
    model.save_pretrained(root / "subword")
    tokenizer.save_pretrained(root / "subword")
    char_encoder().save_pretrained(root / "char")
    return root


def write_dataset(directory, train: str = TRAIN, dev: str = DEV):
    """A data directory of train/dev/test files (the test file is the dev text)."""
    directory.mkdir()
    (directory / "train.txt").write_text(train)
    (directory / "dev.txt").write_text(dev)
    (directory / "test.txt").write_text(dev)
    return directory


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "data")


def test_a_model_card_names_its_base_model_as_the_hub_does(tmp_path):
    from entangle.model_card import write_model_card
    from entangle.training import TrainingConfig
    from tiny import tiny_model

    config = tiny_model(m=1)[0].config
    config.subword_encoder_name = "minilm"  # the offline short name train records
    summary = {"best_epoch": 1, "best_dev": None, "epochs": 2, "steps": 1, "train_time_s": 6.0}
    write_model_card(tmp_path, config, summary, TrainingConfig(output_dir=str(tmp_path)))
    card = (tmp_path / "README.md").read_text()
    assert "base_model: sentence-transformers/all-MiniLM-L6-v2\n" in card
    assert 'Tagger.from_pretrained("PATH")' in card
    # No pipeline the hub could run (its pipelines feed no characters); no dev table without a dev set.
    assert "pipeline_tag" not in card and "## Dev results" not in card
    assert "No dev set: the model kept is that of the lowest training loss (epoch 1 of the 2 trained (at most 5)" in card
    assert str(tmp_path) not in card  # the trainer's own paths are not published with it
    config.char_encoder_name = "google/canine-s"  # a character encoder from the hub is a base model too
    write_model_card(tmp_path, config, summary, TrainingConfig(output_dir=str(tmp_path)))
    assert "base_model:\n- sentence-transformers/all-MiniLM-L6-v2\n- google/canine-s\n" in (tmp_path / "README.md").read_text()


def test_train_evaluate_predict(tmp_path, encoders, data, capsys):
    out = tmp_path / "run"
    main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
          "-m", "1", "--epochs", "2", "--batch-size", "4", "--coattention-width", "24", "--coattention-heads", "4",
          "--coattention-ffn", "40", "--output", str(out)])
    log = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in log] == [1, 2]
    config = json.loads((out / "model" / "config.json").read_text())
    assert (config["hidden_size"], config["num_attention_heads"], config["intermediate_size"]) == (24, 4, 40)
    assert set(log[0]["dev"]) == {"subword", "char", "joint"} and 0.0 <= log[0]["dev"]["joint"]["f1"] <= 1.0
    assert (out / "model" / "model.safetensors").is_file()
    card = (out / "model" / "README.md").read_text()
    assert "co-attention modules per side (m) | 1" in card and "entangle train --data" in card
    assert "## Dev results (best epoch " in card and "of the 2 trained (at most 2)" in card
    assert (out / "training_curves.png").read_bytes().startswith(b"\x89PNG")

    main(["evaluate", str(out), "--data", str(data), "--output", str(tmp_path / "test.json")])
    results = json.loads((tmp_path / "test.json").read_text())["results"]
    assert set(results) == {"subword", "char", "joint"} and "per_type" in results["joint"]

    (tmp_path / "in.txt").write_text("Peter lives in New York.\n\nAnna sings!\n")
    main(["predict", str(out), "--input", str(tmp_path / "in.txt"), "--output-format", "jsonl",
          "--output", str(tmp_path / "out.jsonl")])
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["words"] for r in rows] == [["Peter", "lives", "in", "New", "York", "."], [], ["Anna", "sings", "!"]]
    assert all(len(r["labels"]) == len(r["words"]) == len(r["probabilities"]) for r in rows)
    assert all(0.0 < p <= 1.0 for r in rows for p in r["probabilities"])

    main(["predict", str(out / "model"), "--input", str(data / "dev.txt"), "--input-format", "conll", "--side", "char",
          "--output", str(tmp_path / "out.conll")])
    blocks = (tmp_path / "out.conll").read_text().strip().split("\n\n")
    assert [[line.split("\t")[0] for line in block.splitlines()] for block in blocks] == [["Paris", "is"], ["Anna", "sings"]]

    main(["attention", str(out), "Peter lives in New York.", "--head", "3", "--output", str(tmp_path / "attention.png")])
    assert (tmp_path / "attention.png").read_bytes().startswith(b"\x89PNG")
    assert "1 co-attention modules, words 1 to 6 of 6" in capsys.readouterr().err
    # A suffix matplotlib does not write is refused before the model loads (a model path that is not there).
    with pytest.raises(SystemExit, match=r"^entangle attention: error: .*x.txt: give the picture a suffix"):
        main(["attention", str(tmp_path / "no-model"), "Peter", "--output", str(tmp_path / "x.txt")])


def test_resume_continues_with_the_original_options(tmp_path, encoders, data, capsys):
    out = tmp_path / "run"
    main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
          "-m", "0", "--side", "subword", "--epochs", "1", "--batch-size", "4", "--output", str(out)])
    # Started again in its directory, a run would overwrite the model (and checkpoint) made there.
    model = (out / "model" / "model.safetensors").read_bytes()
    with pytest.raises(SystemExit, match=rf"^entangle train: error: --output {out} holds a run already: continue it "
                                         rf"with --resume {out}, or give another --output$"):
        main(["train", "--data", str(data), "--subword", str(encoders / "subword"), "-m", "0", "--side", "subword",
              "--output", str(out)])
    assert (out / "model" / "model.safetensors").read_bytes() == model
    with pytest.raises(SystemExit, match=r"^entangle train: error: --output .*: .*run_args.json is a file; the output is a directory$"):
        main(["train", "--data", str(data), "--output", str(out / "run_args.json" / "x")])
    # a finished run resumes to the same end: nothing more to train
    main(["train", "--resume", str(out)])
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
    # Options given beside --resume that differ from the recorded ones are named as ignored.
    capsys.readouterr()
    main(["train", "--resume", str(out), "--epochs", "3", "--batch-size", "4", "--no-group-by-length"])
    assert (f"entangle train: warning: {out} continues with the options it was started with; ignored: --epochs 3, "
            "--no-group-by-length\n") in capsys.readouterr().err
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
    with pytest.raises(SystemExit, match="not an output directory of entangle train"):
        main(["train", "--resume", str(tmp_path)])
    # A checkpoint that does not fit the model its record now builds: one line, not load_state's traceback.
    record = json.loads((out / "run_args.json").read_text())
    (out / "run_args.json").write_text(json.dumps({**record, "coattention_layers": 1, "side": "both"}))
    with pytest.raises(SystemExit, match=rf"^entangle train: error: {out / 'checkpoint'}: does not fit this model or "
                                         r"its optimizer \(.*\); it was saved by another entangle version"):
        main(["train", "--resume", str(out)])
    shutil.rmtree(out / "checkpoint")  # as bench leaves a finished run: its model, nothing to resume
    with pytest.raises(SystemExit, match=rf"^entangle train: error: --output {out} holds a trained model already: "
                                         r"give another --output$"):
        main(["train", "--data", str(data), "--output", str(out)])


def test_isolated_sides_from_the_command_line(tmp_path, encoders, data):
    """On by default when both heads train through co-attention, off otherwise; --no-isolate-sides
    sums the losses."""
    out = tmp_path / "run"
    main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
          "-m", "1", "--epochs", "1", "--batch-size", "4", "--output", str(out)])
    assert json.loads((out / "model" / "config.json").read_text())["isolate_sides"] is True
    assert json.loads((out / "run_args.json").read_text())["isolate_sides"] is True  # what bench compares
    resolved = {options: parse_args(["train", "--data", "x", "--output", "y", *options]).isolate_sides
                for options in [(), ("--no-isolate-sides",), ("--side", "subword"), ("-m", "0", "--side", "both"),
                                ("--fusion", "charbert"), ("--side", "char", "-m", "1")]}
    assert resolved == {(): True, ("--no-isolate-sides",): False, ("--side", "subword"): False,
                        ("-m", "0", "--side", "both"): False, ("--fusion", "charbert"): False,
                        ("--side", "char", "-m", "1"): False}
    with pytest.raises(SystemExit, match="isolate_sides separates the two heads' losses: it needs side='both'"):
        main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
              "-m", "1", "--side", "subword", "--isolate-sides", "--output", str(tmp_path / "other")])


def test_bad_input_is_one_clear_error(tmp_path, encoders, data):
    with pytest.raises(SystemExit, match=r"co-attention width \(30\) must be a multiple of its heads \(4\)"):
        main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
              "--coattention-width", "30", "--coattention-heads", "4", "--output", str(tmp_path / "run")])
    (data / "dev.txt").write_text("Paris\tB-LOC\nis\tO\tO\n")
    with pytest.raises(SystemExit, match=r"dev.txt:2: expected 2 columns"):
        main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
              "--output", str(tmp_path / "run")])
    (data / "dev.txt").write_text("Paris\tB-CITY\n")
    with pytest.raises(SystemExit, match=r"not in the training labels.*'B-CITY'"):
        main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
              "--output", str(tmp_path / "run")])
    with pytest.raises(SystemExit, match="unknown dataset|neither a known dataset"):
        main(["train", "--data", "no-such-dataset", "--output", str(tmp_path / "run")])


@pytest.mark.parametrize("option", ["--train-lowercase", "--train-noise"])
def test_a_share_outside_0_to_1_is_one_clear_error_before_the_model_is_built(tmp_path, encoders, data, option,
                                                                              monkeypatch):
    monkeypatch.setattr("entangle.predict.Tagger.create", lambda *args, **kwargs: pytest.fail("model built"))
    with pytest.raises(SystemExit, match=f"{option[2:].replace('-', '_')} must be a share between 0 and 1, got 1.5"):
        main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
              option, "1.5", "--output", str(tmp_path / "run")])


def test_options_from_a_config_file(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("data: wnut17\ncoattention-layers: 3\nlr: 0.0001\noutput: somewhere\n")
    args = parse_args(["train", "--config", str(config), "--lr", "2e-5"])
    assert (args.data, args.coattention_layers, args.lr, args.output) == ("wnut17", 3, 2e-5, "somewhere")
    config.write_text("learning_rate: 1\n")
    with pytest.raises(SystemExit):
        parse_args(["train", "--config", str(config), "--output", "x"])


def test_perturb_and_robustness(tmp_path, encoders, data):
    out = tmp_path / "run"
    main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
          "-m", "1", "--epochs", "1", "--batch-size", "4", "--output", str(out)])
    main(["perturb", "--data", str(data), "--split", "train", "--attack", "upper", "--rate", "1", "--output",
          str(tmp_path / "noisy.txt")])
    assert (tmp_path / "noisy.txt").read_text() == TRAIN.replace("Peter", "PETER").replace("York", "YORK").replace("lives", "LIVES").replace(
        "there", "THERE")
    with pytest.raises(SystemExit, match="noisy.conllu: the copy keeps the format of train.txt.*name it without one"):
        main(["perturb", "--data", str(data), "--split", "train", "--output", str(tmp_path / "noisy.conllu")])
    report = tmp_path / "report"
    main(["robustness", f"tiny={out}", str(out / "model"), "--data", str(data), "--attacks", "charbert,upper",
          "--rates", "0,0.5,1", "--output", str(report)])
    rows = json.loads((report / "noise_curves.json").read_text())
    assert len(rows) == 2 * 3 * 2 * 3  # models x heads (subword, char, joint) x attacks x rates
    assert {r["model"] for r in rows} == {"tiny", "model"}
    assert all(r["drop"] == 0 for r in rows if r["rate"] == 0)
    assert (report / "noise_curves.png").read_bytes().startswith(b"\x89PNG")
    assert "| tiny | subword | charbert |" in (report / "noise_curves.md").read_text()
    assert "(-0.00)" not in (report / "noise_curves.md").read_text()  # no change is +0.00


def test_a_missing_split_is_named(tmp_path, encoders, data):
    out = tmp_path / "run"
    main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
          "-m", "0", "--side", "subword", "--epochs", "1", "--output", str(out)])
    (data / "test.txt").unlink()
    with pytest.raises(SystemExit, match="no 'test' split"):
        main(["evaluate", str(out), "--data", str(data)])


def test_pretrain_char_then_train_on_the_result(tmp_path, encoders, data, capsys):
    (tmp_path / "texts.txt").write_text("Peter lives in New York .\nlol sooo gooood\n" * 6)
    canine = tmp_path / "canine.json"
    canine.write_text(json.dumps({"model_type": "canine", "hidden_size": 32, "num_hidden_layers": 1,
                                  "num_attention_heads": 2, "intermediate_size": 37, "num_hash_buckets": 64,
                                  "local_transformer_stride": 8, "max_position_embeddings": 512}))
    out = tmp_path / "pretrained"
    main(["pretrain-char", "--text", str(tmp_path / "texts.txt"), "--data", str(data / "train.txt"),
          "--char", str(canine), "--teacher", str(encoders / "subword"), "--max-steps", "4", "--batch-size", "4",
          "--log-steps", "2", "--output", str(out)])
    summary = json.loads((out / "pretraining.json").read_text())
    assert [s["texts"] for s in summary["corpus"]] == [12, 8] and summary["steps"] == 4
    assert {"mlm_loss", "distill_loss", "distill_noisy_loss"} <= set(summary["last_log"])
    assert "12 texts" in capsys.readouterr().err
    main(["pretrain-char", "--resume", str(out)])  # finished: resuming changes nothing
    assert len((out / "pretrain_log.jsonl").read_text().splitlines()) == 2
    with pytest.raises(SystemExit, match=rf"^entangle pretrain-char: error: --output {out} holds a run already"):
        main(["pretrain-char", "--text", str(tmp_path / "texts.txt"), "--output", str(out)])  # it was replaced
    assert len((out / "pretrain_log.jsonl").read_text().splitlines()) == 2
    main(["train", "--data", str(data), "--char", str(out), "--subword", str(encoders / "subword"), "-m", "1",
          "--epochs", "1", "--batch-size", "4", "--output", str(tmp_path / "run")])
    config = json.loads((tmp_path / "run" / "model" / "config.json").read_text())
    assert config["char_config"]["model_type"] == "canine" and config["char_encoder_pretrained"]
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(SystemExit, match="empty.txt: no text in it"):
        main(["pretrain-char", "--text", str(tmp_path / "empty.txt"), "--output", str(tmp_path / "x")])


def test_pos_tagging_from_conllu_and_back(tmp_path, encoders):
    from test_conllu import UD

    for split in ("train", "dev", "test"):
        (tmp_path / f"xx-ud-{split}.conllu").write_text(UD)
    out = tmp_path / "run"
    main(["train", "--data", str(tmp_path), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
          "-m", "1", "--epochs", "1", "--batch-size", "4", "--output", str(out)])
    assert json.loads((out / "model" / "config.json").read_text())["task"] == "tagging"
    main(["evaluate", str(out), "--data", str(tmp_path), "--output", str(tmp_path / "test.json")])
    assert set(json.loads((tmp_path / "test.json").read_text())["results"]["subword"]) == {"accuracy"}
    main(["predict", str(out), "--input", str(tmp_path / "xx-ud-test.conllu"), "--input-format", "conllu",
          "--output-format", "conllu", "--output", str(tmp_path / "tagged.conllu")])
    tagged = (tmp_path / "tagged.conllu").read_text().splitlines()
    original = UD.splitlines()
    assert len(tagged) == len(original) and [line.split("\t")[:3] for line in tagged] == [line.split("\t")[:3] for line in original]
    with pytest.raises(SystemExit, match="needs a CoNLL-U --input"):
        main(["predict", str(out), "--input", str(tmp_path / "x.txt"), "--output-format", "conllu"])
    with pytest.raises(SystemExit, match="writes a copy of the input file: give --output FILE$"):
        main(["predict", str(out), "--input", str(tmp_path / "xx-ud-test.conllu"), "--input-format", "conllu",
              "--output-format", "conllu"])
    assert not Path("-").exists()


def test_the_python_api_trains_the_model_the_command_line_trains(tmp_path, encoders, data):
    """Same options and seed: the same weights and dev scores (the model's initialisation is seeded too)."""
    from safetensors.torch import load_file

    from entangle import Tagger, load_corpus

    options = ["--epochs", "1", "--batch-size", "4", "--coattention-width", "24", "--coattention-heads", "4"]
    main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
          "-m", "1", *options, "--output", str(tmp_path / "cli")])
    corpus = load_corpus(str(data))
    tagger = Tagger.create(str(encoders / "char"), str(encoders / "subword"), corpus.labels, coattention_layers=1,
                           coattention_width=24, coattention_heads=4)
    tagger.fit(corpus.train, corpus.dev, output_dir=str(tmp_path / "api"), epochs=1, batch_size=4)
    cli, api = (load_file(tmp_path / run / "model" / "model.safetensors") for run in ("cli", "api"))
    assert cli.keys() == api.keys() and all(torch.equal(cli[k], api[k]) for k in cli)
    dev = [json.loads((tmp_path / run / "metrics.jsonl").read_text())["dev"] for run in ("cli", "api")]
    assert dev[0] == dev[1]


def test_pretrain_coattention_then_train_from_it(tmp_path, encoders, data, capsys):
    out = tmp_path / "coattention"
    encoders = shutil.copytree(encoders, tmp_path / "encoders")  # its character encoder is replaced below
    encoder_options = ["--char", str(encoders / "char"), "--subword", str(encoders / "subword"), "-m", "1",
                       "--coattention-width", "24", "--coattention-heads", "4"]
    main(["pretrain-coattention", "--data", str(data / "train.txt"), *encoder_options, "--max-steps", "3",
          "--batch-size", "2", "--log-steps", "1", "--output", str(out)])
    summary = json.loads((out / "pretraining.json").read_text())
    assert summary["steps"] == 3 and {"char_mlm_loss", "subword_mlm_loss"} <= set(summary["last_log"])
    assert "3 steps" in capsys.readouterr().out
    # Resumed with the options it recorded (the alignment bias left to its default): once rebuilt
    # without the bias, and refused as not fitting its own checkpoint.
    main(["pretrain-coattention", "--resume", str(out)])
    assert json.loads((out / "pretraining.json").read_text())["steps"] == 3
    with pytest.raises(SystemExit, match="config.json: a base model without task heads .*--coattention-init"):
        main(["predict", str(out), "--input", str(data / "train.txt")])
    main(["train", "--data", str(data), *encoder_options, "--coattention-init", str(out), "--epochs", "1",
          "--batch-size", "4", "--output", str(tmp_path / "run")])
    config = json.loads((tmp_path / "run" / "model" / "config.json").read_text())
    assert config["coattention_init"] == str(out) and config["alignment_bias"]  # both with the default bias
    with pytest.raises(SystemExit, match="pretrained for another model .*hidden_size 24 there, 32 here"):
        main(["train", "--data", str(data), "--char", str(encoders / "char"), "--subword", str(encoders / "subword"),
              "-m", "1", "--coattention-init", str(out), "--epochs", "1", "--output", str(tmp_path / "other")])
    char_encoder().save_pretrained(encoders / "char")  # the same name, other weights (a directory written again)
    with pytest.raises(SystemExit, match="pretrained on another character encoder \\(the weights differ from those .*char holds now"):
        main(["train", "--data", str(data), *encoder_options, "--coattention-init", str(out), "--epochs", "1",
              "--output", str(tmp_path / "again")])
