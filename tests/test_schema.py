"""One options schema (``entangle/schema.py``): ``entangle train``'s parser, its ``--config`` files,
bench grids, ``Tagger.create`` and the training loop read the same fields with the same defaults."""

from dataclasses import fields

import pytest

from entangle.arguments import parse_args, train_defaults, train_option_names
from entangle.options import DEFAULT_COATTENTION_LAYERS
from entangle.schema import ModelOptions, TrainingOptions, upgraded, values_of
from entangle.training import TrainingConfig


@pytest.mark.parametrize("options_class", [ModelOptions, TrainingOptions])
def test_every_field_is_a_train_option_with_its_default(options_class):
    defaults = train_defaults()
    for item in fields(options_class):
        default = list(item.default) if isinstance(item.default, tuple) else item.default
        assert defaults[item.name] == default, item.name


def test_the_command_line_gives_the_training_loop_the_same_defaults():
    args = parse_args(["train", "--output", "x"])
    assert TrainingConfig(output_dir="x", **values_of(TrainingOptions, args)) == TrainingConfig(output_dir="x")
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


@pytest.mark.parametrize(("given", "layers", "side"), [
    ({}, DEFAULT_COATTENTION_LAYERS, "both"),
    ({"fusion": "charbert"}, 0, "subword"),
    ({"coattention_layers": 0, "side": "char"}, 0, "char"),
])
def test_defaults_that_depend_on_the_fusion_are_resolved_once(given, layers, side):
    resolved = ModelOptions(**given).resolved()
    assert (resolved.coattention_layers, resolved.side) == (layers, side)
    assert {"num_coattention_layers": layers, "side": side}.items() <= ModelOptions(**given).config_kwargs().items()


def test_isolated_sides_are_resolved_at_parse_time_so_that_bench_records_them():
    assert parse_args(["train"]).isolate_sides is True
    assert parse_args(["train", "--fusion", "charbert"]).isolate_sides is False
    assert parse_args(["train", "-m", "0", "--side", "subword"]).isolate_sides is False


def test_tagger_create_takes_the_options_by_their_names_and_refuses_others():
    from entangle.predict import Tagger

    with pytest.raises(TypeError, match="unknown option 'm'"):
        Tagger.create(None, None, ["O"], m=1)
    with pytest.raises(TypeError, match="give num_coattention_layers as coattention_layers"):
        Tagger.create(None, None, ["O"], num_coattention_layers=0)


def test_options_recorded_by_an_older_entangle_are_read_in_todays_names():
    assert upgraded({"no_group_by_length": True, "epochs": 3}) == {"group_by_length": False, "epochs": 3}
    assert upgraded({"epochs": 3}) == {"epochs": 3}
    assert TrainingConfig(output_dir="x", patience=None).patience == 0  # None said "never stop" before 0 did
