"""torch.compile for inference: the same predictions as the eager model, over batches of different shapes."""

import pytest
import torch

from entangle.onnx_model import OnnxEntangleModel
from entangle.predict import Tagger
from tiny import tiny_model

# Four sentences of different lengths in batches of two: two batch shapes, so dynamic shapes are used.
SENTENCES = [
    ["Empire", "State", "Building", "is", "in", "New", "York"],
    ["lol", "sooo"],
    ["Naïve", "café", "owners", "in", "São", "Paulo", "love", "crème", "brûlée", "😀", "#blessed"],
    ["@paulwalk", "it's", "the", "view"],
]


def test_compiled_inference_gives_the_eager_predictions():
    model, tokenizer = tiny_model(m=1)
    eager = Tagger(model, tokenizer, batch_size=2).probabilities(SENTENCES)
    compiled_tagger = Tagger(model, tokenizer, batch_size=2, compile=True)
    compiled = compiled_tagger.probabilities(SENTENCES)
    assert compiled_tagger._compiled is not None and compiled_tagger._compiled._orig_mod is model
    for side in ("subword", "char"):
        for a, b in zip(eager[side], compiled[side]):
            assert torch.equal(a.argmax(-1), b.argmax(-1)) and torch.allclose(a, b, atol=1e-5), (side, (a - b).abs().max())


def test_compile_is_for_pytorch_models(tmp_path):
    model, tokenizer = tiny_model(m=1)
    with pytest.raises(ValueError, match="PyTorch models"):
        Tagger(OnnxEntangleModel(tmp_path, model.config), tokenizer, compile=True)
