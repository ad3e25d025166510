"""``--part paper-size``: random encoders of CANINE-s's and RoBERTa-base's size (``CanineConfig()``,
``RobertaConfig()`` defaults) with m=2, inference on a few batches: the time of the entanglement
(projections, co-attention, heads) against the two encoders'; the embedded defaults beside them.
"""

from __future__ import annotations

import time

from common import LABELS, RESULTS_DIR, cell, machine_line, test_words
from results_md import replace_section

RESULTS_JSON = RESULTS_DIR / "speed_paper_size.json"
SECTION = "speed-paper-size"


def paper_size(encoders: str, batch_size: int, n: int, rounds: int = 3) -> dict:
    """Forward time of each encoder alone and of the whole m=2 model (both heads) on the same batches
    (median of ``rounds`` passes)."""
    import statistics

    import torch
    from transformers import CanineConfig, CanineModel, RobertaConfig, RobertaModel

    from entangle.data.batching import inference_batches
    from entangle.modeling import EntangleForTokenClassification
    from entangle.modeling.encoders import load_char_encoder, load_subword_encoder
    from entangle.predict import Tagger

    subword, tokenizer = load_subword_encoder("minilm")
    if encoders == "embedded":
        char = load_char_encoder("builtin")
    else:
        # The paper's sizes, random weights; MiniLM's WordPiece tokenizer stands in for RoBERTa's BPE
        # (no download here): similar subwords per word.
        char = CanineModel(CanineConfig())
        subword = RobertaModel(RobertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                             max_position_embeddings=514))
    model, tokenizer = EntangleForTokenClassification.from_encoders(char, subword, LABELS, tokenizer=tokenizer,
                                                                    num_coattention_layers=2)
    model.eval()
    helper = Tagger(model, tokenizer, batch_size)
    batches = [b for _, b in inference_batches(helper.featurizer.featurize(test_words("wnut17", n)), batch_size,
                                               helper.collator)]
    parts = {"char_s": lambda b: model.entangle.char_encoder(input_ids=b["char_ids"], attention_mask=b["char_mask"]),
             "subword_s": lambda b: model.entangle.subword_encoder(input_ids=b["subword_ids"],
                                                                   attention_mask=b["subword_mask"]),
             "model_s": lambda b: model(**b)}
    passes = {key: [] for key in parts}
    with torch.inference_mode():
        for run in parts.values():
            run(batches[-1])  # warm-up on the shortest batch
        for _ in range(rounds):  # alternating, so a change in the machine's load hits every part alike
            for key, run in parts.items():
                start = time.perf_counter()
                for batch in batches:
                    run(batch)
                passes[key].append(time.perf_counter() - start)
    times = {key: statistics.median(seconds) for key, seconds in passes.items()}
    encoders_s = times["char_s"] + times["subword_s"]
    return {**times, "passes": passes, "batches": len(batches),
            "entanglement_share": (times["model_s"] - encoders_s) / encoders_s,
            "parameters_m": sum(p.numel() for p in model.parameters()) / 1e6}


#: what ``--one KIND ARGUMENTS`` runs in a child process, the arguments as strings
MEASUREMENTS = {"paper": lambda e, b, n: paper_size(e, int(b), int(n))}


def write_section(results: dict) -> None:
    names = {"embedded": "built-in + MiniLM (embedded defaults)", "paper": "CANINE-s-sized + RoBERTa-base-sized"}
    lines = ["| encoders (random weights), m=2, both heads | parameters | batches of 32 | character encoder | "
             "subword encoder | whole model | entanglement / (char + subword) |", "|---|---|---|---|---|---|---|"]
    for row in results["paper_size"]:
        share = f"{100 * row['entanglement_share']:.0f}%" if "entanglement_share" in row else ""
        lines.append(f"| {names[row['encoders']]} | {cell(row, 'parameters_m', '.0f')} M | {row.get('batches', '')} | "
                     f"{cell(row, 'char_s', '.2f')} s | {cell(row, 'subword_s', '.2f')} s | "
                     f"{cell(row, 'model_s', '.2f')} s | {share} |")
    replace_section(SECTION, machine_line(results) + "\n\n" + "\n".join(lines))
