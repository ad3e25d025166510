"""``--part cost``: the cost in operations. Floating-point operations of the width part's systems
on its batches (``FlopCounterMode``) beside the overheads that part timed, and the share of
inference time spent in the kernels doing that arithmetic: does arithmetic explain the overhead?
"""

from __future__ import annotations

import json

from common import RESULTS_DIR, ROOT, failed, machine_line
from results_md import replace_section
from width import LEVER, WidthSystems
from width import RESULTS_JSON as WIDTH_JSON

RESULTS_JSON = RESULTS_DIR / "speed_cost.json"
SECTION = "speed-cost"


def flop_counter():
    """torch's ``FlopCounterMode``, taught the CPU kernels it does not count: flash attention and
    the oneDNN LSTM layer (batch first; 4 gates over the input and the hidden state)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    def lstm(x, w_ih, w_hh, *args, **kwargs) -> int:
        return 2 * x[0] * x[1] * (w_ih[0] * w_ih[1] + w_hh[0] * w_hh[1])

    aten = torch.ops.aten
    return FlopCounterMode(display=False, custom_mapping={
        aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *a, **kw: sdpa_flop_count(q, k, v),
        aten._scaled_dot_product_flash_attention_for_cpu_backward:
            lambda grad, q, k, v, *a, **kw: sdpa_backward_flop_count(grad, q, k, v),
        aten.mkldnn_rnn_layer: lstm,
        aten.mkldnn_rnn_layer_backward: lambda x, w_ih, w_hh, *a, **kw: 2 * lstm(x, w_ih, w_hh)})


#: the kernels that do the arithmetic counted by ``flop_counter``
ARITHMETIC = ("aten::addmm", "aten::mm", "aten::bmm", "aten::_scaled_dot_product_flash_attention_for_cpu",
              "aten::mkldnn_rnn_layer")


def cost_model(n: int, steps: int) -> dict:
    """Floating-point operations of the width part's systems on its batches (an inference pass;
    a training pass's forward and backward, without the optimizer's update), and the share of an
    inference pass's time spent in the kernels that do that arithmetic (``torch.profiler``). If the
    operation counts predict the measured overheads, the overhead is arithmetic: only less of it
    (a narrower co-attention, fewer modules, shorter sequences) lowers it."""
    from torch.profiler import profile

    bench = WidthSystems(n, steps)
    rows = {}
    for name in bench.models:
        if name.endswith(LEVER):  # the same arithmetic as its reference
            continue
        row = rows[name] = {}
        for kind, run in (("infer", bench.infer), ("train", lambda name: bench.train(name, step=False))):
            with flop_counter() as counter:
                run(name)
            row[f"{kind}_gflop"] = counter.get_total_flops() / 1e9
        run = bench.infer
        run(name)  # warm-up
        with profile() as profiler:
            run(name)
        events = profiler.key_averages()
        row["arithmetic_time_share"] = (sum(e.self_cpu_time_total for e in events if e.key in ARITHMETIC)
                                        / sum(e.self_cpu_time_total for e in events))
    for row in rows.values():
        for kind in ("infer", "train"):
            floor = rows["char alone"][f"{kind}_gflop"] + rows["subword alone"][f"{kind}_gflop"]
            row[f"{kind}_gflop_overhead"] = row[f"{kind}_gflop"] / floor - 1
    return {"systems": rows, "sentences": len(bench.test), "train_steps": len(bench.train_batches)}


#: what ``--one KIND ARGUMENTS`` runs in a child process, the arguments as strings
MEASUREMENTS = {"cost": lambda n, steps: cost_model(int(n), int(steps))}


def write_section(results: dict) -> None:
    """The operation counts beside the overheads that the width part measured (its JSON, same
    systems and batches)."""
    if failed(results, "cost", SECTION):
        return
    cost = results["cost"]
    measured = json.loads(WIDTH_JSON.read_text())["width"]["systems"] if WIDTH_JSON.is_file() else {}

    def percent(value: float | None) -> str:
        return "" if value is None else f"{100 * value:+.0f}%"

    lines = ["| system | inference GFLOP | overhead in operations | measured overhead | training GFLOP (forward + "
             "backward) | overhead in operations | measured step overhead | arithmetic kernels' share of inference time |",
             "|---|---|---|---|---|---|---|---|"]
    for name, row in cost["systems"].items():
        alone = name.endswith("alone")
        timed = measured.get(name, {})
        lines.append(
            f"| {name} | {row['infer_gflop']:.1f} | {'' if alone else percent(row['infer_gflop_overhead'])} | "
            f"{'' if alone else percent(timed.get('infer_overhead'))} | {row['train_gflop']:.1f} | "
            f"{'' if alone else percent(row['train_gflop_overhead'])} | {'' if alone else percent(timed.get('train_overhead'))} | "
            f"{100 * row['arithmetic_time_share']:.0f}% |")
    lines += ["", f"Operations counted by torch's `FlopCounterMode` (matrix products, attention, the BiLSTM) on the "
              f"width part's batches: {cost['sentences']} WNUT-17 test sentences at batch 32 (subword-side prediction), "
              f"{cost['train_steps']} training batches of 16 (both heads; the optimizer's update is not counted). "
              f"Measured overheads: `{WIDTH_JSON.relative_to(ROOT)}` (float32), the same systems and batches timed. "
              "Arithmetic kernels: matrix products, flash attention and the LSTM layer, as a share of one "
              "inference pass's CPU time (`torch.profiler`)."]
    replace_section(SECTION, machine_line(results) + "\n\n" + "\n".join(lines))
