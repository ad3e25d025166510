"""Packs a pretrained character encoder (an ``entangle pretrain-char`` output directory, also one
whose run still goes on: it holds the encoder of its last checkpoint) into the package, as
``entangle/weights/NAME/``: ``config.json``, the weights in float16 safetensors (loaded as float32)
and a model card (``README.md``) with the data, steps, time, losses, licences and the command.

    python scripts/ship_char_encoder.py /work/pretrain/char-en --corpus /work/pretrain/corpus/sources.json --name char-en
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from entangle.modeling.encoders import SHIPPED_CHAR, load_char_encoder

#: Licences of the labelled datasets whose *training* text pretraining may read (../shared/data/README.md).
DATASET_LICENCES = {"wnut17": "CC-BY 4.0", "conll2003": "research only (Reuters RCV1)", "tweebank": "CC BY-NC-SA 4.0"}


OBJECTIVES = {
    "mlm": "character masked language modelling (spans of up to 3 characters, {mask_rate:.0%} of them)",
    "distill": "distillation from `{teacher}`: a word's mean character state, projected, is pulled to the "
               "teacher's mean state of its subwords ({distill_loss}), from the clean text and from a noisy copy "
               "({attacks} on {noise_rate:.0%} of the eligible words each) held to the clean text's targets",
}


def model_card(alias: str, name: str, run: Path, args_corpus: str, corpus: dict, log: list[dict],
               config, parameters: int, size: int) -> str:
    sources = json.loads(Path(args_corpus).read_text())
    args = json.loads((run / "run_args.json").read_text())
    first, last = log[0], log[-1]
    losses = [key for key in last if key.endswith(("loss", "accuracy"))]
    described = {source["name"]: source for source in sources}
    rows = []
    for record in corpus["sources"]:
        stem = Path(record["source"].split(" ")[0]).stem
        source = described.get(stem)
        dataset = next((d for d in DATASET_LICENCES if f"of {d})" in record["source"]), None)
        what = source["description"] if source else f"training split of {dataset}"
        licence = source["licence"] if source else DATASET_LICENCES.get(dataset, "see its source")
        rows.append(f"| {what} | {record['texts']:,} | {record['words']:,} | {record['characters']:,} | {licence} |")
    layers = config.num_hidden_layers
    scratch = ("`--char builtin` is the same architecture trained from scratch" if layers == 1 else
               f"the same architecture trained from scratch is `--char FILE.json`, FILE.json holding "
               f'`{{"model_type": "{config.model_type}", "num_hidden_layers": {layers}}}` (`--char builtin` has one layer)')
    objectives = "; ".join(OBJECTIVES[o].format(attacks=", ".join(args["noise_attacks"]), **args)
                           for o in args["objectives"])
    summary = run / "pretraining.json"  # written when the run ends
    passes = (f" ({json.loads(summary.read_text())['epochs']:g} passes over the corpus's windows)"
              if summary.is_file() else "")
    budget = (f"{args['max_minutes']:g} minutes" if args.get("max_minutes") else f"{args['max_steps']:,} steps")
    return f"""# `{alias}`: the built-in character encoder, pretrained on English text

`entangle train --char {alias}` loads it offline (from this directory inside the package);
{scratch}.

- **Architecture**: hashed code-point embeddings ({config.num_hash_functions} hash functions x
  {config.num_hash_buckets:,} buckets x {config.embedding_size}) and a {layers}-layer BiLSTM, {config.hidden_size} wide;
  {parameters:,} parameters, stored in float16 ({size / 2**20:.1f} MiB), loaded as float32.
- **Objectives**: {objectives}.
- **Training**: {last['step']:,} steps of batch {args['batch_size']} windows of at most {args['max_chars']}
  characters, {last['elapsed_s'] / 3600:.2f} h on one CPU thread{passes}, AdamW
  at {args['lr']}, warm-up over 5% and linear decay over the budget ({budget}, whichever of
  `--max-steps` and `--max-minutes` ends first).
- **Losses** (mean over the first and the last logged {args['log_steps']} steps):
{chr(10).join(f"  - {key}: {first[key]:.3f} -> {last[key]:.3f}" for key in losses)}

## Data

Unlabelled text only; of the labelled datasets only the *training* splits (never dev or test).
Gathered by `python benchmarks/pretraining_corpus.py --output CORPUS` (Debian packages and
TweetEval's training texts) and the datasets named below.

| text | texts | words | characters | licence |
|---|---|---|---|---|
{chr(10).join(rows)}

The weights are released with the package (Apache-2.0). They were trained on text under the
licences above, some of it for non-commercial or research use only (Tweebank, CoNLL-03); check
that your use fits them.

## Command

    {args['command_line'].replace(str(run), 'OUTPUT').replace(str(Path(args_corpus).parent), 'CORPUS')}

then `python scripts/ship_char_encoder.py OUTPUT --corpus CORPUS/sources.json --name {name}`.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="an entangle pretrain-char output directory")
    parser.add_argument("--corpus", required=True, help="sources.json of benchmarks/pretraining_corpus.py")
    parser.add_argument("--name", default="char-en", help="directory name under entangle/weights")
    args = parser.parse_args()
    aliases = [alias for alias, directory in SHIPPED_CHAR.items() if directory.name == args.name]
    if not aliases:
        parser.error(f"{args.name}: not a shipped encoder's directory (register it in SHIPPED_CHAR, "
                     "entangle/modeling/encoders.py, first)")
    run = Path(args.run)
    encoder = load_char_encoder(str(run))
    target = SHIPPED_CHAR[aliases[0]]
    target.mkdir(parents=True, exist_ok=True)
    encoder.config.save_pretrained(target)  # float32 config: from_pretrained casts the float16 weights up
    save_file({k: v.to(torch.float16).contiguous() for k, v in encoder.state_dict().items()},
              target / "model.safetensors", metadata={"format": "pt"})
    log = [json.loads(line) for line in (run / "pretrain_log.jsonl").read_text().splitlines()]
    parameters = sum(p.numel() for p in encoder.parameters())
    card = model_card(aliases[0], args.name, run, args.corpus, json.loads((run / "corpus.json").read_text()), log,
                      encoder.config, parameters, (target / "model.safetensors").stat().st_size)
    (target / "README.md").write_text(card)
    print(f"{target}: step {log[-1]['step']}, {parameters:,} parameters")


if __name__ == "__main__":
    main()
