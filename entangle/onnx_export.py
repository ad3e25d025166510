"""ONNX export of a trained model (``entangle export-onnx``): the graphs, their shared weights, the
config and the tokenizer, checked against PyTorch (logits within 1e-4) before the directory is
returned. ``entangle.onnx_model`` runs the result.

Needs the ``onnx`` extra (``onnx``, ``onnxscript`` for exporting, ``onnxruntime`` for the check).
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterable
from pathlib import Path

import torch

from .modeling.configuration import EntangleConfig
from .onnx_model import OnnxEntangleModel, _needs_extra, side_graph
from .options import GRAPH, ExportError, MissingExtraError
from .predict import Tagger
from .tasks import get_task

#: Traced with two windows of different lengths, so every length axis is seen varying.
EXAMPLE = [["Entangled", "representations", "tag", "noisy", "text", "@user", "!"], ["Short", "one"]]
#: Where an export is written inside its directory until it has checked itself.
STAGING = ".exporting"
#: Largest difference from PyTorch's logits accepted when an export checks itself.
TOLERANCE = 1e-4


def _input_names(config: EntangleConfig, sides: tuple[str, ...]) -> list[str]:
    names = (["char_ids", "char_mask"] if config.uses_char else []) + (
        ["subword_ids", "subword_mask"] if config.uses_subword else []) + (
        ["subword_char_starts", "subword_char_ends"] if config.uses_subword_char_spans else [])
    # A text classifier reads the first position: it has no unit positions to feed. The joint head
    # reads both sides' unit positions.
    read = [side for side in ("subword", "char") if side in sides or "joint" in sides]
    return names + ([f"{side}_word_starts" for side in read] if get_task(config.task).unit != "text" else [])


class _Graph(torch.nn.Module):
    """The model as a function of positional tensors, returning the logits of ``sides``."""

    def __init__(self, model: torch.nn.Module, names: list[str], sides: tuple[str, ...]):
        super().__init__()
        self.model, self.names, self.sides = model, names, sides

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(**dict(zip(self.names, inputs)), sides=self.sides)
        return tuple(getattr(out, f"{side}_logits") for side in self.sides)


def _dynamic_shapes(config: EntangleConfig, names: list[str]) -> list[dict[int, torch.export.Dim]]:
    batch, words = torch.export.Dim("batch"), torch.export.Dim("words")
    length = {"char": torch.export.Dim("chars", max=config.max_chars) if config.uses_char else None,
              "subword": torch.export.Dim("subwords", max=config.max_subwords) if config.uses_subword else None}
    return [{0: batch, 1: words if name.endswith("word_starts") else length[name.split("_")[0]]} for name in names]


def export_onnx(tagger: Tagger | str | Path, output_dir: str | Path) -> Path:
    """Export a trained model (a :class:`Tagger` or a model directory) to ``output_dir``.

    The graphs take dynamic batch and length axes. The export checks itself: every graph must give
    PyTorch's logits (within ``TOLERANCE``) on two batches of different shapes, else it raises.
    """
    try:  # before anything is written
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401  (the export checks itself on it: missing, it failed after writing)
        import onnxscript  # noqa: F401  (torch's exporter needs it)
    except ImportError as err:
        raise _needs_extra(err) from None
    try:
        from torch.export._patches import register_lstm_while_loop_decomposition  # noqa: F401
    except ImportError:
        raise MissingExtraError(f"torch {torch.__version__} lacks the LSTM decomposition that exporting needs "
                                "(torch.export._patches; torch 2.13 has it)") from None
    if not isinstance(tagger, Tagger):
        tagger = Tagger.from_pretrained(tagger, device=None)  # on the CPU (below)
    if not isinstance(tagger.model, torch.nn.Module):
        raise ExportError("this model is already an ONNX export")
    tagger.model.eval()
    if tagger.model.config.fusion != "coattention":
        raise ExportError(f"ONNX export covers the entanglement model, not fusion={tagger.model.config.fusion!r}")
    output_dir = Path(output_dir)
    if (output_dir / "config.json").exists():  # another model's files would be mixed with this one's
        raise ExportError(f"{output_dir}: already holds a model (config.json); export to a new directory")
    if output_dir.is_dir() and any(p.name != STAGING for p in output_dir.iterdir()):  # an older export's graphs
        raise ExportError(f"{output_dir}: not empty; export to a new or empty directory")
    # Written into a folder of its own inside it and moved up once checked: a failed export leaves
    # nothing that loads (and the directory as it was).
    made = not output_dir.exists()
    staging = output_dir / STAGING
    shutil.rmtree(staging, ignore_errors=True)  # what an export killed there left
    staging.mkdir(parents=True)
    # Traced and checked on the CPU, where ONNX Runtime runs the graph: on a GPU the check compared
    # CUDA's arithmetic (TF32 convolutions in cuDNN by default) with the CPU's. A Tagger given on a
    # GPU goes back there after.
    device = tagger.model.device
    try:
        tagger.model.to("cpu")
        _write(tagger, staging)
    except BaseException:
        shutil.rmtree(output_dir if made else staging, ignore_errors=True)
        raise
    finally:
        tagger.model.to(device)
    for path in staging.iterdir():
        path.rename(output_dir / path.name)
    staging.rmdir()
    return output_dir


def _write(tagger: Tagger, output_dir: Path) -> None:
    """The graphs, config and tokenizer into ``output_dir``, checked against PyTorch."""
    import onnx
    from onnx.utils import Extractor
    from torch.export._patches import register_lstm_while_loop_decomposition

    model, config = tagger.model, tagger.model.config
    sides = config.trained_sides
    names = _input_names(config, sides)
    batches = [{k: v.to(model.device) for k, v in tagger.collator(tagger.featurizer.featurize(sentences)).items()}
               for sentences in (EXAMPLE, EXAMPLE[1:])]
    # torch's exporter traces aten.lstm as a loop over the actual length only while capturing; its
    # decomposition step retraces with the default loop, which can fix the length to the example's
    # (pytorch issue 191855; fixed upstream by keeping the loop for both steps, as done here).
    with warnings.catch_warnings(), register_lstm_while_loop_decomposition():
        warnings.simplefilter("ignore")
        # Opset 23 turns scaled_dot_product_attention into ONNX's Attention operator, which ONNX
        # Runtime runs about twice as fast as the matmul-softmax-matmul graph of earlier opsets.
        program = torch.onnx.export(_Graph(model, names, sides), tuple(batches[0][name] for name in names),
                                    input_names=names, output_names=[f"{side}_logits" for side in sides],
                                    dynamic_shapes={"inputs": tuple(_dynamic_shapes(config, names))},
                                    dynamo=True, opset_version=23, verbose=False)
    _check_dynamic(program.model.graph.inputs)
    program.save(output_dir / GRAPH, external_data=True)
    if len(sides) > 1:
        # The weights stay in the one external data file (onnx_model.WEIGHTS): the pruned graphs'
        # initializers keep pointing into it.
        full = Extractor(onnx.load(output_dir / GRAPH, load_external_data=False))
        for side in sides:
            pruned = full.extract_model(names, [f"{side}_logits"])
            used = {name for node in pruned.graph.node for name in node.input}
            onnx.save(full.extract_model([name for name in names if name in used], [f"{side}_logits"]),
                      output_dir / side_graph(side))
    config.save_pretrained(output_dir)
    if tagger.tokenizer is not None:
        tagger.tokenizer.save_pretrained(output_dir)
    _check(model, OnnxEntangleModel.from_pretrained(output_dir), batches)


def _check_dynamic(inputs: Iterable) -> None:  # onnx_ir values
    """Refuse a graph whose inputs lost a dynamic axis: torch's exporter fixes an axis to the
    example's size where the model's code specialises it (Hugging Face's CANINE does)."""
    for value in inputs:
        fixed = [(axis, dim) for axis, dim in enumerate(value.shape) if isinstance(dim, int)]
        if fixed:
            axis, size = fixed[0]
            raise ExportError(f"torch's exporter fixed axis {axis} of {value.name} to {size}: the model's code "
                               "specialises it (CANINE does), so its ONNX graph would only take that size")


def _check(model: torch.nn.Module, exported: OnnxEntangleModel, batches: list[dict[str, torch.Tensor]]) -> None:
    sides = model.config.trained_sides
    for side_set in [sides, *([(side,) for side in sides] if len(sides) > 1 else [])]:
        for batch in batches:
            with torch.inference_mode():
                expected = model(**batch, sides=side_set)
            shape = tuple(batch[next(iter(batch))].shape)
            try:
                got = exported(**batch, sides=side_set)
            except Exception as err:  # ONNX Runtime's errors have no common base class
                raise ExportError(f"the exported graph for sides {side_set} fails on a batch of shape {shape}: "
                                  f"{err}") from err
            for side in side_set:
                a, b = getattr(expected, f"{side}_logits").cpu(), getattr(got, f"{side}_logits")
                difference = (a - b).abs().max().item() if a.shape == b.shape else float("inf")
                if not difference <= TOLERANCE:
                    raise ExportError(f"the exported graph for sides {side_set} differs from PyTorch on a batch of "
                                      f"shape {shape}: {side} logits {difference:.2e} apart (tolerance {TOLERANCE})")


