"""ONNX export: the exported graphs give PyTorch's logits and labels (each side, windows, padding, CLI)."""

import json
import warnings

import pytest
import torch

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed (pip install -e '.[onnx]')")
pytest.importorskip("onnxscript", reason="the onnx extra is not installed (pip install -e '.[onnx]')")

from entangle.cli import main  # noqa: E402
from entangle import onnx_export  # noqa: E402
from entangle.onnx_export import export_onnx  # noqa: E402
from entangle.onnx_model import WEIGHTS, OnnxEntangleModel, side_graph  # noqa: E402
from entangle.options import GRAPH, ExportError  # noqa: E402
from entangle.predict import Tagger  # noqa: E402
from tiny import tiny_model  # noqa: E402

SENTENCES = [
    ["Empire", "State", "Building", "is", "in", "New", "York"],
    ["lol"],
    ["Naïve", "café", "owners", "in", "São", "Paulo", "love", "crème", "brûlée", "😀", "#blessed"],
    ["@paulwalk", "it's", "the", "view"],
]
#: Longer than the tiny BERT's 64 positions and the character encoder's 2048: cut into several windows.
LONG = "The quick brown fox jumps over the lazy dog in New York City".split() * 36
# An export takes 10-30 s of torch's tracing: each configuration covers what it can (m2-joint: two
# modules, both sides and the joint head, one graph per head).
CONFIGS = {"m0-subword": dict(m=0, side="subword"), "m0-char": dict(m=0, side="char"),
           "m2-joint": dict(m=2, side="both", joint_head=True), "m1-downsample3": dict(m=1, side="both", char_downsample=3)}


@pytest.fixture(scope="module", params=list(CONFIGS))
def exported(request, tmp_path_factory):
    """(PyTorch tagger, ONNX tagger, export directory) for one configuration."""
    torch.manual_seed(0)
    model, tokenizer = tiny_model(**CONFIGS[request.param])
    torch_tagger = Tagger(model, tokenizer, batch_size=3)
    path = export_onnx(torch_tagger, tmp_path_factory.mktemp(request.param))
    return torch_tagger, Tagger.from_pretrained(path, batch_size=3), path


def side_sets(config):
    sides = config.trained_sides
    return [sides] + ([(side,) for side in sides] if len(sides) > 1 else [])


def test_logits_match_pytorch_on_a_batch_of_different_lengths(exported):
    torch_tagger, onnx_tagger, _ = exported
    assert isinstance(onnx_tagger.model, OnnxEntangleModel)
    batch = torch_tagger.collator(torch_tagger.featurizer.featurize(SENTENCES))
    for sides in side_sets(torch_tagger.model.config):
        with torch.inference_mode():
            expected = torch_tagger.model(**batch, sides=sides)
        got = onnx_tagger.model(**batch, sides=sides)
        for side in ("subword", "char", "joint"):
            a, b = getattr(expected, f"{side}_logits"), getattr(got, f"{side}_logits")
            assert (a is None) == (b is None) == (side not in sides)
            if a is not None:
                assert a.shape == b.shape and torch.allclose(a, b, atol=1e-4), (sides, side, (a - b).abs().max())


@pytest.mark.parametrize("sentences", [SENTENCES, [LONG, *SENTENCES]], ids=["short", "with-long"])
def test_labels_are_identical(exported, sentences):
    torch_tagger, onnx_tagger, _ = exported
    assert len(torch_tagger.featurizer.featurize([LONG])) > 1
    for side in torch_tagger.model.config.trained_sides:
        expected, got = torch_tagger.tag(sentences, side), onnx_tagger.tag(sentences, side)
        assert [s.labels for s in got] == [s.labels for s in expected]
        for a, b in zip(expected, got):
            assert torch.allclose(torch.tensor(a.probabilities), torch.tensor(b.probabilities), atol=1e-4)


def test_exported_graphs_are_padding_invariant(exported):
    _, onnx_tagger, _ = exported
    alone = onnx_tagger.collator(onnx_tagger.featurizer.featurize(SENTENCES[1:2]))
    padded = onnx_tagger.collator(onnx_tagger.featurizer.featurize([SENTENCES[2], SENTENCES[1]]))
    for side in onnx_tagger.model.config.trained_sides:
        a = getattr(onnx_tagger.model(**alone, sides=(side,)), f"{side}_logits")[0, :1]
        b = getattr(onnx_tagger.model(**padded, sides=(side,)), f"{side}_logits")[1, :1]
        assert torch.allclose(a, b, atol=1e-5), (side, (a - b).abs().max())


def test_directory_is_self_contained_with_one_weights_file(exported):
    import onnx

    torch_tagger, _, path = exported
    names = {p.name for p in path.iterdir()}
    assert {"config.json", GRAPH, WEIGHTS} <= names and [p for p in names if p.endswith(".data")] == [WEIGHTS]
    if torch_tagger.model.config.uses_subword:
        assert "tokenizer.json" in names
    if torch_tagger.model.config.side == "both":
        full = len(onnx.load(path / GRAPH, load_external_data=False).graph.node)
        for side in ("subword", "char"):
            # The other side's last co-attention module and head are pruned away.
            assert len(onnx.load(path / side_graph(side), load_external_data=False).graph.node) < full
    else:
        assert not any(side_graph(side) in names for side in ("subword", "char"))


def test_an_onnx_model_is_for_inference_only(exported):
    _, onnx_tagger, _ = exported
    with pytest.raises(TypeError, match="inference only"):
        onnx_tagger.fit([], output_dir="unused")


def test_cli_export_then_predict_and_evaluate(tmp_path, capsys):
    model, tokenizer = tiny_model(m=0, side="char")
    Tagger(model, tokenizer).save_pretrained(tmp_path / "model")
    main(["export-onnx", str(tmp_path / "model"), str(tmp_path / "onnx")])
    assert (tmp_path / "onnx" / GRAPH).is_file()
    with pytest.raises(SystemExit, match="^entangle export-onnx: error: this model is already an ONNX export$"):
        main(["export-onnx", str(tmp_path / "onnx"), str(tmp_path / "again")])
    for holder in ("model", "onnx"):  # another model's files, or the source's own, would be mixed with the export's
        with pytest.raises(SystemExit, match=rf"^entangle export-onnx: error: {tmp_path / holder}: already holds a model "
                                             r"\(config.json\); export to a new directory$"):
            main(["export-onnx", str(tmp_path / "model"), str(tmp_path / holder)])
    data = tmp_path / "data.conll"
    data.write_text("Paris\tB-LOC\nis\tO\nnice\tO\n\nAnna\tB-PER\nsings\tO\n")
    results = {}
    for name in ("model", "onnx"):
        main(["predict", str(tmp_path / name), "--input", str(data), "--input-format", "conll",
              "--output-format", "jsonl", "--output", str(tmp_path / f"{name}.jsonl")])
        main(["evaluate", str(tmp_path / name), "--data", str(data), "--output", str(tmp_path / f"{name}.json")])
        results[name] = json.loads((tmp_path / f"{name}.json").read_text())["results"]
    predicted = {name: [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
                 for name in ("model", "onnx")}
    assert [r["labels"] for r in predicted["onnx"]] == [r["labels"] for r in predicted["model"]]
    assert results["onnx"] == results["model"]
    copied = Tagger.from_pretrained(tmp_path / "onnx")
    copied.save_pretrained(tmp_path / "onnx")  # where it was loaded from: its files are already there
    copied.save_pretrained(tmp_path / "copy")
    assert [s.labels for s in Tagger.from_pretrained(tmp_path / "copy").tag(SENTENCES)] == [
        s.labels for s in copied.tag(SENTENCES)]
    with pytest.raises(FileNotFoundError, match="not an exported model"):
        OnnxEntangleModel.from_pretrained(tmp_path / "model")
    # A damaged export: a graph that is not ONNX, weights cut short. One line naming the graph, not a traceback.
    for damage, file in (("graph", GRAPH), ("weights", WEIGHTS)):
        broken = tmp_path / f"broken-{damage}"
        copied.save_pretrained(broken)
        (broken / file).write_bytes((broken / file).read_bytes()[:100])
        with pytest.raises(SystemExit, match=rf"^entangle predict: error: {broken / GRAPH}: ONNX Runtime cannot load "
                                             r"it \(.+\); export the model again \(entangle export-onnx\)$"):
            main(["predict", str(broken), "--input", str(data), "--input-format", "conll"])
    # A config.json an export cannot be built from: one line naming it, as for a PyTorch model.
    broken = tmp_path / "broken-config"
    copied.save_pretrained(broken)
    (broken / "config.json").write_text((broken / "config.json").read_text().replace('"task": "ner"', '"task": "nope"'))
    with pytest.raises(SystemExit, match=rf"^entangle predict: error: {broken / 'config.json'}: unknown task 'nope'"):
        main(["predict", str(broken), "--input", str(data), "--input-format", "conll"])


def test_a_model_whose_code_fixes_a_length_is_refused(tmp_path):
    """Hugging Face's CANINE specialises the character length under torch.export: a clear error, not a
    graph that only takes the example's length."""
    model, tokenizer = tiny_model(m=0, side="char", char="canine")
    with pytest.raises(ExportError, match="fixed axis 1 of char_ids"):
        export_onnx(Tagger(model, tokenizer), tmp_path)


def test_models_it_cannot_export_are_refused_in_one_line(tmp_path, capsys):
    model, tokenizer = tiny_model(m=0, side="subword", fusion="charbert")
    Tagger(model, tokenizer).save_pretrained(tmp_path / "charbert")
    with pytest.raises(SystemExit, match="^entangle export-onnx: error: ONNX export covers the entanglement model, "
                                         "not fusion='charbert'$"):
        main(["export-onnx", str(tmp_path / "charbert"), str(tmp_path / "out")])
    assert "Traceback" not in capsys.readouterr().err


def test_a_failed_export_leaves_nothing_that_loads(tmp_path, monkeypatch, capsys):
    """The self-check used to fail after the graphs, config and tokenizer were written, with a
    traceback: predict then ran the unchecked export, and a new export there was refused."""
    import entangle.onnx_export as onnx_export

    model, tokenizer = tiny_model(m=0, side="char")
    Tagger(model, tokenizer).save_pretrained(tmp_path / "model")
    monkeypatch.setattr(onnx_export, "TOLERANCE", -1.0)  # every graph now "differs" from PyTorch
    with pytest.raises(SystemExit, match=r"^entangle export-onnx: error: the exported graph for sides \('char',\) "
                                         r"differs from PyTorch on a batch of shape"):
        main(["export-onnx", str(tmp_path / "model"), str(tmp_path / "onnx")])
    assert "Traceback" not in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model"]  # the directory it made is gone
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "old.onnx").write_text("")
    monkeypatch.setattr(onnx_export, "TOLERANCE", 1e-4)
    with pytest.raises(SystemExit, match=rf"^entangle export-onnx: error: {tmp_path / 'notes'}: not empty; export to a "
                                         r"new or empty directory$"):
        main(["export-onnx", str(tmp_path / "model"), str(tmp_path / "notes")])
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(onnx_export, "TOLERANCE", -1.0)
    with pytest.raises(SystemExit, match="differs from PyTorch"):
        main(["export-onnx", str(tmp_path / "model"), str(tmp_path / "empty")])
    assert (tmp_path / "empty").is_dir() and not any((tmp_path / "empty").iterdir())  # as it was
    monkeypatch.setattr(onnx_export, "TOLERANCE", 1e-4)
    monkeypatch.chdir(tmp_path / "empty")  # the working directory itself ("."): its contents are moved in
    main(["export-onnx", str(tmp_path / "model"), "."])
    assert (tmp_path / "empty" / GRAPH).is_file() and Tagger.from_pretrained(tmp_path / "empty").tag(SENTENCES)
    assert not (tmp_path / "empty" / ".exporting").exists()
    # The device is checked for an export too (it ran on the CPU whatever was asked).
    from entangle.options import UsageError

    with pytest.raises(UsageError, match="unknown device 'tpu9'"):
        Tagger.from_pretrained(tmp_path / "empty", device="tpu9")
    if torch.cuda.is_available():
        with pytest.warns(UserWarning, match="an ONNX export runs on ONNX Runtime's CPU provider, not the GPU"):
            Tagger.from_pretrained(tmp_path / "empty", device="cuda")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "auto" (predict's default) chooses no GPU to warn of
            Tagger.from_pretrained(tmp_path / "empty", device="auto")
    else:
        with pytest.raises(UsageError, match="this machine has no CUDA device"):
            Tagger.from_pretrained(tmp_path / "empty", device="cuda")


def test_an_export_from_a_directory_is_traced_on_the_cpu(tmp_path, monkeypatch):
    """ONNX Runtime runs the graph on the CPU: loaded for the GPU ("auto", the default), the export's
    check compared CUDA's arithmetic (cuDNN's TF32 convolutions) with the CPU's."""
    model, tokenizer = tiny_model(m=0, side="char")
    Tagger(model, tokenizer).save_pretrained(tmp_path / "model")
    load, devices = Tagger.from_pretrained.__func__, []

    def recorded(cls, path, device="auto", **kwargs):
        devices.append(device)
        return load(cls, path, device=device, **kwargs)

    monkeypatch.setattr(Tagger, "from_pretrained", classmethod(recorded))
    export_onnx(tmp_path / "model", tmp_path / "onnx")
    assert devices[0] is None  # the export's own load (its check then loads the ONNX directory)


def test_a_tagger_on_a_gpu_is_exported_from_the_cpu_and_given_back_there(tmp_path, monkeypatch):
    """A Tagger passed on a GPU was traced there, its check comparing CUDA's arithmetic with the CPU's."""
    tagger = Tagger(*tiny_model(m=1))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # the GPU's case where there is one
    tagger.model.to(device)
    write, traced = onnx_export._write, []
    monkeypatch.setattr(onnx_export, "_write", lambda t, d: traced.append(t.model.device) or write(t, d))
    export_onnx(tagger, tmp_path / "onnx")
    assert traced == [torch.device("cpu")] and tagger.model.device == device
