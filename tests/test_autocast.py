"""Half-precision inference (``Tagger(autocast=...)``): a trained model's predictions do not change."""

import pytest
import torch

from entangle.cli import main
from entangle.data.conll import Sentence
from entangle.onnx_model import OnnxEntangleModel
from entangle.predict import Tagger
from tiny import tiny_model

TRAIN = [
    Sentence("Empire State Building is in New York".split(), ["B-LOC", "I-LOC", "I-LOC", "O", "O", "B-LOC", "I-LOC"]),
    Sentence("Paul lives in São Paulo".split(), ["B-PER", "O", "O", "B-LOC", "I-LOC"]),
    Sentence("lol sooo gooood #blessed".split(), ["O", "O", "O", "O"]),
    Sentence("@paulwalk it's the view".split(), ["B-PER", "O", "O", "O"]),
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny model trained until it is sure of its labels, as a real model is of most words (an
    untrained one is near-uniform, where any rounding flips the argmax)."""
    torch.manual_seed(0)
    model, tokenizer = tiny_model(m=1)
    tagger = Tagger(model, tokenizer, batch_size=2)
    output = tmp_path_factory.mktemp("autocast") / "run"
    tagger.fit(TRAIN, TRAIN, output_dir=str(output), epochs=30, batch_size=2, lr=3e-3, new_lr=3e-3, patience=0)
    return tagger, output


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_autocast_gives_the_float32_predictions(trained, precision):
    tagger, _ = trained
    sentences = [s.words for s in TRAIN] + [["New", "York", "lol"]]
    reference = tagger.probabilities(sentences)
    half = Tagger(tagger.model, tagger.tokenizer, batch_size=2, autocast=precision).probabilities(sentences)
    assert tagger.evaluate(TRAIN)["subword"]["f1"] == 1.0  # the model is trained, so its predictions mean something
    sure_words = words = 0
    for side in ("subword", "char"):
        assert any(not torch.equal(a, b) for a, b in zip(reference[side], half[side]))  # half precision did run
        for a, b in zip(reference[side], half[side]):
            assert b.dtype == torch.float32
            assert torch.allclose(a, b, atol=0.02), (side, (a - b).abs().max())  # half precision: close, not equal
            # Where float32's top two are further apart than rounding can move them, the label must agree;
            # a near-tie (it happens under load, when thread counts change the training's sums) may flip.
            top2 = a.topk(2, dim=-1).values
            sure = top2[..., 0] - top2[..., 1] > 0.04
            assert torch.equal(a.argmax(-1)[sure], b.argmax(-1)[sure]), side
            sure_words += int(sure.sum())
            words += sure.numel()
    # The check above covers nearly every prediction (41 of 46 once in a loaded CI run, 0.89; most runs all).
    assert sure_words >= 0.85 * words


def test_autocast_from_the_command_line(trained, tmp_path, capsys):
    _, output = trained
    (tmp_path / "in.txt").write_text("Paul lives in New York\n")
    main(["predict", str(output), "--input", str(tmp_path / "in.txt"), "--autocast", "bf16"])
    bf16 = capsys.readouterr().out
    main(["predict", str(output), "--input", str(tmp_path / "in.txt")])
    fp32 = capsys.readouterr().out
    labels = [[line.split("\t")[:2] for line in out.splitlines() if line] for out in (bf16, fp32)]
    assert labels[0] == labels[1] and len(labels[0]) == 5


def test_autocast_choices_are_checked(tmp_path):
    model, tokenizer = tiny_model(m=0, side="subword")
    with pytest.raises(ValueError, match="autocast must be one of"):
        Tagger(model, tokenizer, autocast="int8")
    with pytest.raises(ValueError, match="apply to PyTorch models"):
        Tagger(OnnxEntangleModel(tmp_path, model.config), tokenizer, autocast="bf16")


def test_attention_on_cuda_runs_without_the_cudnn_backend():
    """Issue #27: cuDNN's attention builds a graph per input shape (bf16 training was ~10x slower);
    the context chooses the backends PyTorch may use, and on other devices leaves its choice."""
    from entangle.modeling.kernels import attention_kernels

    before = torch.backends.cuda.cudnn_sdp_enabled()
    with attention_kernels(torch.device("cuda")):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with attention_kernels(torch.device("cpu")):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
