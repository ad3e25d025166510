"""Which attention kernels PyTorch may pick on a GPU.

On an H100 (torch 2.11), bf16 mixed-precision training ran about 10x slower than float32, and
MiniLM alone showed it too; disabling PyTorch's cuDNN scaled-dot-product-attention backend gave 3x
of it back (issue #27). That backend builds a new cuDNN graph for every new input shape, and
length-grouped batches bring a new shape almost every step. Flash and memory-efficient attention
need no such building, so on CUDA attention runs without the cuDNN backend, in training and in
pretraining (whose `--mixed-precision` gives it half-precision inputs too).
"""

from __future__ import annotations

import contextlib

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

#: Every backend but cuDNN's, in PyTorch's order of preference.
CUDA_ATTENTION_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attention_kernels(device: torch.device) -> contextlib.AbstractContextManager:
    """A context for the forward and backward passes on ``device``: on CUDA, attention without the
    cuDNN backend; elsewhere PyTorch's own choice."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    return sdpa_kernel(CUDA_ATTENTION_BACKENDS)
