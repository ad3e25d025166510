"""Recurrent layers whose weights stay separate tensors on every device.

On CUDA, ``nn.LSTM`` and ``nn.GRU`` flatten their weights into views of one buffer (what cuDNN
reads) when moved there; a safetensors checkpoint then drops the views as shared tensors and
resuming training fails (issue #27). These subclasses keep the parameters, their names and
initialisation, so checkpoints are unchanged, but never flatten. cuDNN then copies the weights
into one buffer at each call (a few megabytes for the encoders here) and warns that it does:
expected here, so :func:`separate_weights_expected` silences that one warning around the calls."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

from torch import nn

_COMPACTION_WARNING = "RNN module weights are not part of single contiguous chunk of memory"


class _NeverFlattened:
    def flatten_parameters(self) -> None:
        return None


class UnflattenedLSTM(_NeverFlattened, nn.LSTM):
    """``nn.LSTM`` whose weights are never views of one flat buffer."""


class UnflattenedGRU(_NeverFlattened, nn.GRU):
    """``nn.GRU`` whose weights are never views of one flat buffer."""


@contextlib.contextmanager
def separate_weights_expected(on_cuda: bool) -> Iterator[None]:
    """Around an unflattened RNN's call: on CUDA, cuDNN's per-call warning about copying the
    weights into one chunk is expected, so it is not shown; nothing changes elsewhere (and ONNX
    export, which runs on the CPU, traces no warnings machinery)."""
    if not on_cuda:
        yield
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_COMPACTION_WARNING, category=UserWarning)
        yield
