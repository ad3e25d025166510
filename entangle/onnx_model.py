"""An exported model run on ONNX Runtime, with the PyTorch model's call interface, so the
:class:`~entangle.predict.Tagger` runs it like the PyTorch model (``entangle.onnx_export`` writes
the directory).

An exported directory is self-contained: ``config.json`` and the tokenizer files beside
``model.onnx`` (every trained head's logits) and, for a model with several heads, one graph per
head (``model.subword.onnx``, ``model.char.onnx``, ``model.joint.onnx``) pruned to what its
logits need, so predicting from one side skips the other side's last co-attention module as in
PyTorch. All graphs read their weights from one file, ``model.onnx.data``.

Needs the ``onnx`` extra (``onnxruntime`` for running).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from transformers import AutoConfig

from .modeling.configuration import EntangleConfig
from .modeling.modeling_entangle import EntangleTaggerOutput
from .options import GRAPH, MissingExtraError, ModelLoadError, is_onnx_dir

WEIGHTS = GRAPH + ".data"  # the name torch's exporter gives the external weights of GRAPH


def side_graph(side: str) -> str:
    return f"model.{side}.onnx"


def _needs_extra(error: ImportError) -> MissingExtraError:
    return MissingExtraError(f"{error}: ONNX export and inference need the onnx extra (pip install 'entangle-nlp[onnx]')")


class OnnxEntangleModel:
    """An exported model on ONNX Runtime, called like :class:`EntangleForTokenClassification`.

    ``model(**batch, sides=...)`` returns the same output object, so the :class:`Tagger`
    (windows, stitching, decoding) runs it unchanged. Inference only; one session per graph,
    opened when first needed. Runs on ONNX Runtime's CPU provider with ``torch.get_num_threads()``
    threads (one setting for both back ends), unless ``threads`` is given.
    """

    training = False
    device = torch.device("cpu")

    def __init__(self, path: str | Path, config: EntangleConfig, threads: int | None = None):
        self.path, self.config, self.threads = Path(path), config, threads
        self._sessions: dict[str, object] = {}

    @classmethod
    def from_pretrained(cls, path: str | Path, threads: int | None = None) -> "OnnxEntangleModel":
        if not is_onnx_dir(path):
            raise FileNotFoundError(f"{Path(path) / GRAPH}: not an exported model (entangle export-onnx)")
        try:
            config = AutoConfig.from_pretrained(path)
        except (ValueError, KeyError, TypeError) as err:  # as the PyTorch model's config is named
            raise ModelLoadError(f"{Path(path) / 'config.json'}: {err}") from None
        if not isinstance(config, EntangleConfig):
            raise ValueError(f"{Path(path) / 'config.json'}: not an entanglement model's config")
        return cls(path, config, threads)

    def _session(self, sides: tuple[str, ...]):
        # One head: its own pruned graph; several: the whole graph (its other outputs are dropped).
        name = side_graph(sides[0]) if len(sides) == 1 and len(self.config.trained_sides) > 1 else GRAPH
        if name not in self._sessions:
            try:
                import onnxruntime
            except ImportError as err:
                raise _needs_extra(err) from None
            from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = self.threads or torch.get_num_threads()
            options.inter_op_num_threads = 1
            try:
                self._sessions[name] = onnxruntime.InferenceSession(str(self.path / name), options,
                                                                    providers=["CPUExecutionProvider"])
            except (ort_errors.Fail, ort_errors.InvalidArgument, ort_errors.InvalidGraph, ort_errors.InvalidProtobuf,
                    ort_errors.NoSuchFile, ort_errors.NotFound, ort_errors.NoModel) as err:
                # A damaged or incomplete export (a graph or model.onnx.data cut short or missing).
                reason = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise ModelLoadError(f"{self.path / name}: ONNX Runtime cannot load it ({reason}); "
                                     "export the model again (entangle export-onnx)") from None
        return self._sessions[name]

    def __call__(self, sides: tuple[str, ...] | None = None, **batch: torch.Tensor) -> EntangleTaggerOutput:
        sides = tuple(sides or self.config.trained_sides)
        if not set(sides) <= set(self.config.trained_sides):
            raise ValueError(f"this model has heads for {', '.join(self.config.trained_sides)} only, not "
                             f"{', '.join(sides)}")
        session = self._session(sides)
        feed = {i.name: batch[i.name].cpu().numpy() for i in session.get_inputs()}
        logits = dict(zip((o.name for o in session.get_outputs()), map(torch.from_numpy, session.run(None, feed))))
        logits = {name: value for name, value in logits.items() if name.removesuffix("_logits") in sides}
        return EntangleTaggerOutput(logits=logits.get(f"{self.config.predict_side}_logits"),
                                    **{f"{side}_logits": logits.get(f"{side}_logits") for side in ("subword", "char", "joint")})

    def eval(self) -> "OnnxEntangleModel":
        return self

    def train(self, mode: bool = True) -> "OnnxEntangleModel":
        if mode:
            raise TypeError("an ONNX model is for inference only; fine-tune the PyTorch model it was exported from")
        return self

    def to(self, device) -> "OnnxEntangleModel":
        """Stays on ONNX Runtime's CPU provider; batches are moved to the CPU when run."""
        return self

    def save_pretrained(self, path: str | Path) -> None:
        """Copy the exported files (graphs, weights, config) to ``path``."""
        Path(path).mkdir(parents=True, exist_ok=True)
        if Path(path).samefile(self.path):  # saved where it was loaded from: the files are there
            return
        for file in self.path.iterdir():
            if file.suffix in (".onnx", ".data") or file.name == "config.json":
                shutil.copy2(file, Path(path) / file.name)
