"""``--part levers``: the listed levers one by one. m=2 as ``predict`` and ``train`` run it beside
the same model with one lever undone (batches in input order or not grouped by length,
``torch.no_grad`` or autograd instead of ``torch.inference_mode``, attention spelled out or with
a float mask instead of ``scaled_dot_product_attention`` with a boolean one), passes alternating,
each lever's logits checked against the reference's; the fused projections timed alone on the
shapes a pass gives the co-attention.
"""

from __future__ import annotations

from functools import partial

from common import RESULTS_DIR, alternating_timings, failed, machine_line, tagger, test_words, training_windows
from results_md import replace_section

RESULTS_JSON = RESULTS_DIR / "speed_levers.json"
SECTION = "speed-levers"


def matmul_softmax_attention(q, k, v, attn_mask, dropout_p: float = 0.0):
    """Attention spelled out (scores, masked softmax, weighted sum): what one
    ``scaled_dot_product_attention`` call replaces."""
    import math

    import torch.nn.functional as F

    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(~attn_mask, float("-inf"))
    return F.dropout(scores.softmax(-1), dropout_p) @ v


def float_mask_attention(q, k, v, attn_mask, dropout_p: float = 0.0):
    """``scaled_dot_product_attention`` with the padding as an added -inf (one row per sequence,
    broadcast over queries) instead of a boolean mask."""
    import torch
    import torch.nn.functional as F

    additive = torch.zeros(attn_mask[..., :1, :].shape, dtype=q.dtype).masked_fill(~attn_mask[..., :1, :], float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=additive, dropout_p=dropout_p)


#: ``--part levers``: the attention the co-attention's blocks use in place of its
#: ``scaled_dot_product_attention`` with a boolean mask
ATTENTION_LEVERS = {"attention as matmul + softmax": matmul_softmax_attention,
                    "attention with a float mask": float_mask_attention}
REFERENCE = "entangle m=2"


def levers_cost(n: int, steps: int, rounds: int = 5) -> dict:
    """The issue's levers at the embedded defaults, each undone alone beside the reference (m=2 as
    ``predict`` and ``train`` run it: batches sorted or grouped by length, ``torch.inference_mode``,
    ``scaled_dot_product_attention`` with boolean masks), all in this process, passes alternating
    (``alternating_timings``). Inference: the first ``n`` WNUT-17 test sentences at batch 32, subword
    side; each lever's logits are compared with the reference's. Training (both heads, fused AdamW):
    ``steps`` batches of 16 spread across an epoch of WNUT-17 train grouped by length, against the
    same windows shuffled into batches; and the padding of a whole epoch either way."""
    from types import SimpleNamespace
    from unittest import mock

    import torch

    from entangle.data.batching import inference_batches, train_loader
    from entangle.data.corpus import load_corpus
    from entangle.modeling import coattention
    from entangle.training import adamw, parameter_groups

    corpus = load_corpus("wnut17", splits=("train",))
    taggers = {name: tagger(name, 32, corpus.labels) for name in ("char alone", "subword alone", REFERENCE)}
    helper = taggers[REFERENCE]
    windows = helper.featurizer.featurize(test_words("wnut17", n))

    def with_windows(chunk: list) -> tuple:
        return chunk, helper.collator(chunk)

    sorted_batches = list(inference_batches(windows, 32, helper.collator))
    input_order = [with_windows(windows[i:i + 32]) for i in range(0, len(windows), 32)]
    train_windows = training_windows(helper, corpus.split("train"))
    epochs = {grouped: list(train_loader(train_windows, 16, with_windows, torch.Generator().manual_seed(0), grouped))
              for grouped in (True, False)}
    # Timed: `steps` of the grouped epoch's batches, spread across it (the first, the longest, left
    # out), against the same windows shuffled into batches: only the padding differs.
    stride = len(epochs[True]) // steps
    grouped_sample = epochs[True][stride // 2 :: stride][:steps]
    windows_sample = [w for chunk, _ in grouped_sample for w in chunk]
    order = torch.randperm(len(windows_sample), generator=torch.Generator().manual_seed(0)).tolist()
    shuffled = [windows_sample[i] for i in order]
    sampled = {True: [batch for _, batch in grouped_sample],
               False: [helper.collator(shuffled[i:i + 16]) for i in range(0, len(shuffled), 16)]}
    optimizers = {name: adamw(parameter_groups(t.model, 5e-5, 5e-4, 0.01)) for name, t in taggers.items()}

    def logits_pass(name: str, batches=sorted_batches, grad_mode=torch.inference_mode) -> dict:
        """Each window's own rows of logits, by the window's identity."""
        side = "char" if name == "char alone" else "subword"
        model, rows = taggers[name].model.eval(), {}
        with grad_mode():
            for chunk, batch in batches:
                logits = getattr(model(**batch, sides=(side,)), f"{side}_logits")
                rows.update({id(w): logits[row, slice(*w.own_rows)].detach() for row, w in enumerate(chunk)})
        return rows

    def train_pass(name: str, grouped: bool = True) -> None:
        model = taggers[name].model.train()
        for batch in sampled[grouped]:
            model(**batch).loss.backward()
            optimizers[name].step()
            optimizers[name].zero_grad()
        model.eval()

    def patched(attention, run):
        with mock.patch.object(coattention, "F", SimpleNamespace(scaled_dot_product_attention=attention)):
            return run()

    def both(name: str) -> dict:
        return {"infer": partial(logits_pass, name), "train": partial(train_pass, name)}

    infer_levers = {"batches in input order": partial(logits_pass, REFERENCE, input_order),
                    "torch.no_grad": partial(logits_pass, REFERENCE, grad_mode=torch.no_grad),
                    "autograd on": partial(logits_pass, REFERENCE, grad_mode=torch.enable_grad),
                    **{name: partial(patched, attention, partial(logits_pass, REFERENCE))
                       for name, attention in ATTENTION_LEVERS.items()}}
    runs = {name: both(name) for name in taggers}
    runs.update({f"{REFERENCE}, {lever}": {"infer": run} for lever, run in infer_levers.items()})
    runs[f"{REFERENCE}, batches not grouped by length"] = {"train": partial(train_pass, REFERENCE, False)}
    for lever, attention in ATTENTION_LEVERS.items():
        runs[f"{REFERENCE}, {lever}"]["train"] = partial(patched, attention, partial(train_pass, REFERENCE))
    rows = alternating_timings(runs, rounds)

    reference = logits_pass(REFERENCE)
    words = sum(w.own_end - w.own_start for w in windows)
    for name, row in rows.items():
        if "infer_s" in row:
            row["infer_words_per_s"] = words / row["infer_s"]
            row["infer_vs_reference"] = rows[REFERENCE]["infer_s"] / row["infer_s"]
        if "train_s" in row:
            row["train_steps_per_s"] = steps / row["train_s"]
            row["train_vs_reference"] = rows[REFERENCE]["train_s"] / row["train_s"]
    for lever, run in infer_levers.items():
        logits = run()
        rows[f"{REFERENCE}, {lever}"]["max_logit_difference"] = max(
            (logits[key] - value).abs().max().item() for key, value in reference.items())

    def padding(batches: list[dict]) -> dict:
        return {kind: {"positions": sum(b[f"{kind}_mask"].numel() for b in batches),
                       "real": sum(b[f"{kind}_mask"].sum().item() for b in batches)} for kind in ("char", "subword")}

    return {"systems": rows, "sentences": n, "words": words, "train_steps": steps, "rounds": rounds,
            "epoch_padding": {("grouped" if grouped else "shuffled"): padding([b for _, b in batches])
                              for grouped, batches in epochs.items()},
            "sample_padding": {("grouped" if grouped else "shuffled"): padding(batches) for grouped, batches in sampled.items()},
            "epoch_batches": len(epochs[True]),
            "projections": projection_cost(helper.model, sorted_batches, rounds)}


def projection_cost(model, batches: list, rounds: int) -> dict:
    """The co-attention's input projections timed alone, on the inputs one inference pass gives its
    blocks (recorded by hooks): keys and values as one matrix product (the model's) or as two, and
    a self-attention block's queries, keys and values as the model's two products or as one."""
    import torch
    import torch.nn.functional as F

    from entangle.modeling.coattention import TransformerBlock

    calls = []

    def record(block, args) -> None:
        x, context = args[0], args[1]
        calls.append((block, torch.randn(x.shape), None if context is x else torch.randn(context.shape)))

    hooks = [block.register_forward_pre_hook(record) for block in model.modules() if isinstance(block, TransformerBlock)]
    with torch.inference_mode():
        for _, batch in batches:
            model(**batch, sides=("subword",))
    for hook in hooks:
        hook.remove()

    def weights(block) -> dict:
        """The block's projections stored each way, so that no pass pays for splitting or joining them."""
        width = block.query.weight.shape[0]
        kv_weight, kv_bias = block.key_value.weight.detach(), block.key_value.bias.detach()
        return {"q": (block.query.weight.detach(), block.query.bias.detach()), "kv": (kv_weight, kv_bias),
                "k": (kv_weight[:width].clone(), kv_bias[:width].clone()), "v": (kv_weight[width:].clone(), kv_bias[width:].clone()),
                "qkv": (torch.cat([block.query.weight, kv_weight]).detach(), torch.cat([block.query.bias, kv_bias]).detach())}

    stored = {block: weights(block) for block, *_ in calls}

    def project(fuse: str) -> None:
        with torch.inference_mode():
            for block, x, context in calls:
                w = stored[block]
                if fuse == "qkv" and context is None:
                    F.linear(x, *w["qkv"])
                    continue
                F.linear(x, *w["q"])
                for part in ("k", "v") if fuse == "none" else ("kv",):
                    F.linear(x if context is None else context, *w[part])

    rows = alternating_timings({"keys and values apart": {"infer": partial(project, "none")},
                                "keys and values fused (the model)": {"infer": partial(project, "kv")},
                                "queries, keys and values fused in self-attention": {"infer": partial(project, "qkv")}},
                               rounds)
    return {"calls": len(calls), "self_attention_calls": sum(context is None for *_, context in calls), "systems": rows}


#: what ``--one KIND ARGUMENTS`` runs in a child process, the arguments as strings
MEASUREMENTS = {"levers": lambda n, steps: levers_cost(int(n), int(steps))}


def write_section(results: dict) -> None:
    if failed(results, "levers", SECTION):
        return
    levers = results["levers"]
    systems = levers["systems"]

    def cell(row: dict, kind: str, rate: str, fmt: str) -> str:
        return f"{row[f'{kind}_{rate}']:{fmt}} ({row[f'{kind}_vs_reference']:.2f}×)" if f"{kind}_s" in row else ""

    lines = ["| system: what differs from the reference | inference words/s (batch 32; speed vs reference) | "
             "training steps/s (batch 16; speed vs reference) | largest logit difference from the reference |",
             "|---|---|---|---|"]
    for name, row in systems.items():
        difference = f"{row['max_logit_difference']:.1e}" if "max_logit_difference" in row else ""
        label = "entangle m=2 (the reference)" if name == REFERENCE else name
        lines.append(f"| {label} | {cell(row, 'infer', 'words_per_s', '.0f')} | {cell(row, 'train', 'steps_per_s', '.3f')} | "
                     f"{difference} |")
    padding, sample = levers["epoch_padding"], levers["sample_padding"]

    def waste(counted: dict, order: str, kind: str) -> str:
        counts = counted[order][kind]
        return f"{100 * (counts['positions'] / counts['real'] - 1):.0f}%"

    lines += ["", f"Padding, as extra positions over the real ones, over an epoch of WNUT-17 train ({levers['epoch_batches']} "
              f"batches of 16): characters {waste(padding, 'grouped', 'char')} grouped by length vs "
              f"{waste(padding, 'shuffled', 'char')} shuffled, subwords {waste(padding, 'grouped', 'subword')} vs "
              f"{waste(padding, 'shuffled', 'subword')}; in the timed batches (the same windows either way): characters "
              f"{waste(sample, 'grouped', 'char')} vs {waste(sample, 'shuffled', 'char')}, subwords "
              f"{waste(sample, 'grouped', 'subword')} vs {waste(sample, 'shuffled', 'subword')}."]
    projections = levers["projections"]
    reference_s = systems[REFERENCE]["infer_s"]
    lines += ["", "| co-attention input projections, timed alone | time per inference pass | share of the reference's pass |",
              "|---|---|---|"]
    lines += [f"| {name} | {1000 * row['infer_s']:.0f} ms | {100 * row['infer_s'] / reference_s:.1f}% |"
              for name, row in projections["systems"].items()]
    lines += ["", f"{levers['sentences']} WNUT-17 test sentences ({levers['words']} words) per inference pass, "
              f"{levers['train_steps']} training batches per training pass (spread across the grouped epoch, or "
              "their windows shuffled); median of "
              f"{levers['rounds']} alternating passes after a warm-up pass of each. Projections: the "
              f"{projections['calls']} block calls of one reference inference pass ({projections['self_attention_calls']} "
              "of them self-attention), on random inputs of their shapes. Peak memory of the process (all models): "
              f"{levers.get('peak_mb', 0):.0f} MB."]
    replace_section(SECTION, machine_line(results) + "\n\n" + "\n".join(lines))
