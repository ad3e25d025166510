"""Why did the converged m ablation's deeper stacks stop learning? `entangle train`, unchanged,
with a JSON line per optimizer step: `step`; each head's training loss (`subword`, `char`, `joint`)
and the share of the batch's labelled words it labels other than O (`*_nonO`); the gradient norm,
before clipping, of the character encoder (`g_char_enc`), of each side's co-attention stack
(`g_char_co`, `g_sub_co`), of the character head (`g_char_head`) and of the whole model (`g_total`). Asked in session 42:
with the new parts at 5e-4, m=4 scored 0 dev F1 on every head after its first epoch and m=3's
character head from its second epoch on.

    python benchmarks/collapse_probe.py STEPS.jsonl -- train --data wnut17 -m 4 --max-steps 213 ...

It wraps the model's forward pass and Accelerate's clipping from the outside (instrumentation only:
the run trains as it would without it). An NER task with an O label, the co-attention fusion, both
sides, one process and float32 (the norms are read before any mixed-precision unscaling) are assumed.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F
from accelerate import Accelerator

from entangle.cli import main
from entangle.modeling import modeling_entangle

SIDES = ("subword", "char", "joint")


def probe(log) -> None:
    """Patch the forward pass (per-head losses of a training batch) and the clipping (gradient norms,
    one line written per optimizer step)."""
    forward, clip = modeling_entangle._EntangleWithHeads.forward, Accelerator.clip_grad_norm_
    row: dict = {}
    steps = iter(range(sys.maxsize))

    def probed_forward(self, *args, labels=None, **kwargs):
        out = forward(self, *args, labels=labels, **kwargs)
        if labels is not None and self.training:
            row.clear()
            row["step"] = next(steps)
            gold = labels != -100
            for side in SIDES:
                if (logits := getattr(out, f"{side}_logits")) is not None:
                    logits = logits.detach()
                    row[side] = round(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.flatten(),
                                                      ignore_index=-100).item(), 4)
                    row[f"{side}_nonO"] = round((logits.argmax(-1)[gold] != self.config.label2id["O"]).float()
                                                 .mean().item(), 4)
        return out

    def probed_clip(self, parameters, max_norm, norm_type=2):
        model = self.unwrap_model(self._models[0])
        parts = {"char_enc": model.entangle.char_encoder, "char_co": model.entangle.coattention.char_layers,
                 "sub_co": model.entangle.coattention.subword_layers, "char_head": model.classifiers["char"]}
        for name, module in parts.items():
            norms = [p.grad.norm() for p in module.parameters() if p.grad is not None]
            row[f"g_{name}"] = round(torch.stack(norms).norm().item(), 4) if norms else None
        total = clip(self, parameters, max_norm, norm_type)
        row["g_total"] = round(float(total), 4)
        log.write(json.dumps(row) + "\n")
        log.flush()
        return total

    modeling_entangle._EntangleWithHeads.forward = probed_forward
    Accelerator.clip_grad_norm_ = probed_clip


if __name__ == "__main__":
    if "--" not in sys.argv[2:]:
        sys.exit(__doc__)
    with open(sys.argv[1], "w") as steps:
        probe(steps)
        main(sys.argv[sys.argv.index("--") + 1:])
