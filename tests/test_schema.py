"""One options schema (``entangle/schema.py``): ``entangle train``'s parser, its ``--config`` files,
bench grids, ``Tagger.create`` and the training loop read the same fields with the same defaults."""

import re
from dataclasses import fields

import pytest

from entangle.arguments import parse_args, read_yaml, train_defaults, train_option_names
from entangle.cli import main
from entangle.options import BUILTIN_CHAR_LR, DEFAULT_COATTENTION_LAYERS, UsageError
from entangle.schema import ModelOptions, TrainingOptions, upgraded, values_of
from entangle.tasks import TASKS
from entangle.training import TrainingConfig


@pytest.mark.parametrize("options_class", [ModelOptions, TrainingOptions])
def test_every_field_is_a_train_option_with_its_default(options_class):
    defaults = train_defaults()
    for item in fields(options_class):
        default = list(item.default) if isinstance(item.default, tuple) else item.default
        assert defaults[item.name] == default, item.name


def test_the_command_line_gives_the_training_loop_the_same_defaults():
    args = parse_args(["train", "--output", "x"])
    # The command line resolves the rates as the loop would: builtin-en's, and the new parts' for the
    # task of the data (without data: NER).
    resolved_rates = TrainingConfig(output_dir="x", char_lr=BUILTIN_CHAR_LR, new_lr=TASKS["ner"].new_lr)
    assert TrainingConfig(output_dir="x", **values_of(TrainingOptions, args)) == resolved_rates
    assert ModelOptions(**values_of(ModelOptions, args)).resolved() == ModelOptions().resolved()


def test_a_switch_has_its_negation():
    assert parse_args(["train", "--no-group-by-length"]).group_by_length is False
    assert parse_args(["train"]).group_by_length is True
    assert parse_args(["train", "--joint-head"]).joint_head is True


def test_a_file_names_an_option_by_any_of_its_flags(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("m: 1\ngroup-by-length: false\ntrain_noise_attacks: [lower]\n")
    args = parse_args(["train", "--config", str(config)])
    assert (args.coattention_layers, args.group_by_length, args.train_noise_attacks) == (1, False, ["lower"])
    assert train_option_names()["m"] == train_option_names()["coattention_layers"] == "coattention_layers"
    config.write_text("no-group-by-length: true\n")  # a switch is named by its positive flag
    with pytest.raises(SystemExit):
        parse_args(["train", "--config", str(config)])


def test_a_config_that_is_not_yaml_is_one_line_naming_its_line(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("epochs: 3\nm: [1\n")
    with pytest.raises(SystemExit):
        parse_args(["train", "--config", str(config)])
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"entangle: error: {config}:3: not valid YAML: ")
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", str(config)])
    assert str(exit_info.value.code).startswith(f"entangle bench: error: {config}:3: not valid YAML: ")


def test_every_option_with_a_default_shows_it_in_help_a_zero_too(capsys):
    for command in ("perturb", "robustness", "predict", "train"):
        with pytest.raises(SystemExit):
            parse_args([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
        if command in ("perturb", "robustness"):
            assert "--seed SEED (default: 0)" in text, command
        if command == "predict":
            assert "--token-column TOKEN_COLUMN (default: 0)" in text
        if command == "train":  # a float zero too
            assert re.search(r"--train-noise RATE .*?\(0: off\) \(default: 0\.0\)", text)


def test_an_option_under_two_of_its_names_is_refused(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("m: 1\ncoattention-layers: 3\n")
    with pytest.raises(SystemExit):
        parse_args(["train", "--config", str(config)])
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"entangle: error: {config}: 'm' and 'coattention-layers' name one option (coattention_layers): give it once")
    config.write_text("m: 1\n2: 3\n")  # a number for a key
    with pytest.raises(SystemExit):
        parse_args(["train", "--config", str(config)])
    assert capsys.readouterr().err.splitlines()[-1] == f"entangle: error: {config}: option 2 is not a name (an option of entangle train)"
    config.write_text("output: x\ndatasets: [wnut17]\nsystems: {a: {batch-size: 8, batch_size: 16}}\n")
    with pytest.raises(SystemExit, match="system 'a': 'batch-size' and 'batch_size' name one option"):
        main(["bench", str(config)])


def test_a_key_given_twice_is_named_with_its_line_not_overridden_silently(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("epochs: 3\nm: 1\nepochs: 5\n")
    with pytest.raises(SystemExit):
        parse_args(["train", "--config", str(config)])
    assert capsys.readouterr().err.splitlines()[-1] == f"entangle: error: {config}:3: not valid YAML: 'epochs' given twice"
    config.write_text("output: x\ndatasets: [wnut17]\nsystems:\n  a: {m: 1}\n  a: {m: 2}\n")
    with pytest.raises(SystemExit, match=f"{config}:5: not valid YAML: 'a' given twice"):
        main(["bench", str(config)])
    # A merge key's values may be overridden: that is what it is for.
    config.write_text("base: &base {m: 1, epochs: 3}\nrun:\n  <<: *base\n  epochs: 5\n")
    assert read_yaml(config)["run"] == {"m": 1, "epochs": 5}


@pytest.mark.parametrize(("line", "message"), [
    ("epochs: true", "epochs: expected an integer, got True"),
    ("epochs: 1.5", "epochs: expected an integer, got 1.5"),
    ("seed: [1]", "seed: expected an integer, got [1]"),
    ("char: [builtin]", "char: expected a string, got ['builtin']"),
    ("lr_schedule: cosine", "lr_schedule: expected one of linear, plateau, got 'cosine'"),
    ("task: foo", "task: expected one of ner, tagging, char-tagging, classification, got 'foo'"),
    ("train_noise_attacks: [bogus]", "train_noise_attacks: expected one of "),
    ("group-by-length: 1", "group-by-length: expected true or false, got 1"),
    ("limit-train: 0", "limit-train: must be at least 1, got 0"),
])
def test_a_config_value_is_checked_as_the_command_line_checks_it(line, message, tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text(line + "\n")
    with pytest.raises(SystemExit):
        parse_args(["train", "--config", str(config)])
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"entangle: error: {config}: {message}")


def test_config_values_the_command_line_would_take_are_taken(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("lr: 1e-4\nepochs: '3'\nnew_lr: null\ntrain_noise_attacks: lower\n")  # YAML reads 1e-4 as text
    args = parse_args(["train", "--config", str(config)])
    assert (args.lr, args.epochs, args.train_noise_attacks) == (1e-4, 3, ["lower"])
    # null is the option's default, as in a bench grid; 0 save steps and an infinite clipping norm mean "off"
    config.write_text("alignment-bias: null\npatience: null\nsave-steps: 0\nmax-grad-norm: .inf\n")
    args = parse_args(["train", "--config", str(config)])
    assert (args.alignment_bias, args.patience, args.save_steps) == (True, 3, 0)
    TrainingOptions(**values_of(TrainingOptions, args))


@pytest.mark.parametrize(("option", "message"), [
    (["--epochs", "0"], "epochs must be at least 1, got 0"),
    (["--batch-size", "0"], "batch_size must be at least 1, got 0"),
    (["--lr=-1e-5"], "lr must be at least 0, got -1e-05"),
    (["--warmup-ratio", "1.5"], "warmup_ratio must be a share between 0 and 1, got 1.5"),
    (["--max-grad-norm", "0"], "max_grad_norm must be positive, got 0.0"),
    (["--lr", "nan"], "lr must be a finite number, got nan"),
    (["--new-lr", "inf"], "new_lr must be a finite number, got inf"),
    (["--seed=-1"], "seed must be at least 0, got -1"),  # set_seed's traceback once the model was built
    (["--seed", "4294967296"], "seed must be at most 2**32 - 1, got 4294967296"),
])
def test_training_options_out_of_range_stop_before_anything_is_read(option, message, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--data", str(tmp_path / "not-read"), "--output", str(tmp_path / "run"), *option])
    assert exit_info.value.code == f"entangle train: error: {message}"


@pytest.mark.parametrize(("option", "message"), [
    ({"epochs": 1.5}, "epochs must be a whole number, got 1.5"),
    ({"batch_size": "4"}, "batch_size must be a whole number, got '4'"),
    ({"patience": True}, "patience must be a whole number, got True"),
    ({"lr": "1e-4"}, "lr must be a number, got '1e-4'"),
    ({"seed": None}, "seed must be a whole number, got None"),
    ({"lr_schedule": "Plateau"}, "lr_schedule must be one of linear, plateau, got 'Plateau'"),  # trained linear
    ({"mixed_precision": "fp8"}, "mixed_precision must be one of no, fp16, bf16, got 'fp8'"),
    ({"train_noise_attacks": ("drop", "typo")}, "train_noise_attacks must be one of .*, got 'typo'"),
])
def test_training_options_of_the_wrong_type_from_the_api_are_refused(option, message):
    """The command line converts its text; the Python API takes what it is given (1.5 epochs trained one)."""
    with pytest.raises(UsageError, match=message):
        TrainingOptions(**option)


@pytest.mark.parametrize(("option", "message"), [
    ({"coattention_layers": 1.5}, "coattention_layers must be a whole number, got 1.5"),
    ({"coattention_layers": "2"}, "coattention_layers must be a whole number, got '2'"),
    ({"char_downsample": True}, "char_downsample must be a whole number, got True"),
    ({"positional_alignment": 1}, "positional_alignment must be true or false, got 1"),
    ({"char_distill": "0.5"}, "char_distill must be a number, got '0.5'"),
    ({"side": 3}, "side must be a string, got 3"),
    ({"char": None}, "char must be a string, got None"),
])
def test_model_options_of_the_wrong_type_from_the_api_are_refused(option, message):
    """Tagger.create and a grid pass values as given (m=1.5 failed deep in torch, "2" in a comparison)."""
    with pytest.raises(UsageError, match=message):
        ModelOptions(**option)
    assert ModelOptions(char_distill=1, coattention_layers=None).resolved().coattention_layers == DEFAULT_COATTENTION_LAYERS


@pytest.mark.parametrize(("given", "layers", "side"), [
    ({}, DEFAULT_COATTENTION_LAYERS, "both"),
    ({"fusion": "charbert"}, 0, "subword"),
    ({"coattention_layers": 0, "side": "char"}, 0, "char"),
])
def test_defaults_that_depend_on_the_fusion_are_resolved_once(given, layers, side):
    resolved = ModelOptions(**given).resolved()
    assert (resolved.coattention_layers, resolved.side) == (layers, side)
    assert {"num_coattention_layers": layers, "side": side}.items() <= ModelOptions(**given).config_kwargs().items()


def test_m_the_side_and_isolation_are_resolved_at_parse_time_so_that_bench_records_them():
    assert parse_args(["train"]).isolate_sides is True
    assert (parse_args(["train"]).coattention_layers, parse_args(["train"]).side) == (DEFAULT_COATTENTION_LAYERS, "both")
    charbert = parse_args(["train", "--fusion", "charbert"])
    assert (charbert.coattention_layers, charbert.side) == (0, "subword")
    assert parse_args(["train", "--fusion", "charbert"]).isolate_sides is False
    assert parse_args(["train", "-m", "0", "--side", "subword"]).isolate_sides is False


@pytest.mark.parametrize(("argv", "bias"), [
    ([], True),
    (["-m", "1"], True),
    (["-m", "0", "--side", "subword"], False),  # no co-attention to bias
    (["--fusion", "charbert"], False),
    (["--char-downsample", "4"], True),
    (["--no-alignment-bias"], False),
    (["--no-alignment-bias", "--char-downsample", "4"], False),
])
def test_the_alignment_bias_is_on_where_the_co_attention_reads_every_character(argv, bias):
    args = parse_args(["train", *argv])
    assert args.alignment_bias is bias
    assert ModelOptions(**values_of(ModelOptions, args)).config_kwargs()["alignment_bias"] is bias


def test_tagger_create_takes_the_options_by_their_names_and_refuses_others():
    from entangle.predict import Tagger

    with pytest.raises(TypeError, match="unknown option 'm'"):
        Tagger.create(None, None, ["O"], m=1)
    with pytest.raises(TypeError, match="give num_coattention_layers as coattention_layers"):
        Tagger.create(None, None, ["O"], num_coattention_layers=0)


@pytest.mark.parametrize(("argv", "joint_head", "predict_side", "char_lr"), [
    ([], True, "joint", 5e-4),  # builtin-en, pretrained but built in: --new-lr
    (["--side", "subword", "-m", "0"], False, "subword", 5e-4),
    (["--no-joint-head"], False, "subword", 5e-4),
    (["--predict-side", "joint", "--no-joint-head"], True, "joint", 5e-4),  # joint implies the head
    (["--char", "builtin", "--new-lr", "1e-3"], True, "joint", 1e-3),
    (["--char", "google/canine-s", "--lr", "2e-5"], True, "joint", 2e-5),  # a pretrained transformer: --lr
    (["--char-lr", "1e-4"], True, "joint", 1e-4),
])
def test_derived_defaults_are_resolved_at_parse_time_so_that_a_run_records_them(argv, joint_head, predict_side, char_lr):
    args = parse_args(["train", *argv])
    assert (args.joint_head, args.predict_side, args.char_lr) == (joint_head, predict_side, char_lr)


@pytest.mark.parametrize(("argv", "new_lr", "char_lr"), [
    (["--data", "wnut17"], 5e-4, 5e-4),
    (["--data", "tweebank"], 5e-4, 5e-4),
    (["--data", "turkish-german-sagt"], 5e-4, 5e-4),
    (["--data", "tweeteval-irony"], 1e-4, 5e-4),  # text classification: the new parts slower, not the encoder
    (["--data", "wnut2020"], 1e-4, 5e-4),  # a named dataset's task, its files not needed
    (["--data", "tweeteval-irony", "--new-lr", "2e-3"], 2e-3, 2e-3),  # a given rate moves the built-in encoder
    (["--data", "wnut17", "--task", "classification"], 1e-4, 5e-4),
])
def test_the_new_parts_learn_at_the_rate_of_the_task(argv, new_lr, char_lr):
    args = parse_args(["train", *argv])
    assert (args.new_lr, args.char_lr) == (new_lr, char_lr)


def test_the_task_of_data_files_is_told_from_their_names_at_parse_time(tmp_path):
    table = tmp_path / "train.tsv"
    table.write_text("text\tlabel\nhello there\ta\n", encoding="utf-8")
    assert parse_args(["train", "--train", str(table)]).new_lr == TASKS["classification"].new_lr
    assert parse_args(["train", "--data", str(tmp_path)]).new_lr == TASKS["classification"].new_lr
    (tmp_path / "train.tsv").rename(tmp_path / "train.txt")
    assert parse_args(["train", "--data", str(tmp_path)]).new_lr == TASKS["ner"].new_lr
    # Data that is not there: left to loading, which says so in one line.
    assert parse_args(["train", "--data", str(tmp_path / "missing")]).new_lr is None


def test_a_saved_character_encoder_is_told_apart_by_its_config(tmp_path):
    from entangle.options import char_encoder_kind

    (tmp_path / "config.json").write_text('{"model_type": "entangle-char"}')
    assert char_encoder_kind(str(tmp_path)) == (True, True)
    (tmp_path / "config.json").write_text('{"model_type": "canine"}')
    assert char_encoder_kind(str(tmp_path)) == (False, True)
    assert char_encoder_kind(str(tmp_path / "config.json")) == (False, False)  # a .json config: a fresh encoder
    assert char_encoder_kind("builtin") == (True, False)


def test_options_recorded_by_an_older_entangle_are_read_in_todays_names():
    assert upgraded({"no_group_by_length": True, "epochs": 3}) == {"group_by_length": False, "epochs": 3,
                                                                   "joint_head": False, "predict_side": "subword",
                                                                   "alignment_bias": False, "train_lowercase": 0.0,
                                                                   "coattention_layers": 2, "side": "both"}
    assert upgraded({"epochs": 3, "joint_head": False, "predict_side": "char", "alignment_bias": True,
                     "train_lowercase": 0.5, "coattention_layers": 1, "side": "char"}) == {
        "epochs": 3, "joint_head": False, "predict_side": "char", "alignment_bias": True, "train_lowercase": 0.5,
        "coattention_layers": 1, "side": "char"}
    # m and the side, recorded unresolved (None) before session 41: the fusion's defaults.
    charbert = upgraded({"fusion": "charbert", "coattention_layers": None, "side": None})
    assert (charbert["coattention_layers"], charbert["side"]) == (0, "subword")
    assert TrainingConfig(output_dir="x", patience=None).patience == 0  # None said "never stop" before 0 did


@pytest.mark.parametrize(("recorded", "joint_head", "predict_side", "char_lr"), [
    ({"char": "builtin", "side": "both", "joint_head": True, "predict_side": None}, True, "subword", 1e-3),
    ({"char": "builtin-en", "side": "char", "predict_side": None}, False, "char", 1e-5),
    ({"char": "x.json", "fusion": "charbert", "joint_head": False}, False, "subword", 1e-3),
])
def test_derived_defaults_recorded_unresolved_are_read_as_the_rules_of_then(recorded, joint_head, predict_side, char_lr):
    """Before parse time resolved them, a recorded None meant: no joint head unless asked for, the
    subword head predicting when both sides trained, a pretrained character encoder at --lr."""
    run = upgraded({**recorded, "lr": 1e-5, "new_lr": 1e-3, "char_lr": None})
    assert (run["joint_head"], run["predict_side"], run["char_lr"]) == (joint_head, predict_side, char_lr)
