"""The pretrained character encoder shipped inside the package: loads offline as float32, with a
model card; a missing or damaged weight file is one error line naming the file."""

import shutil

import pytest
import torch

from entangle.cli import main
from entangle.modeling import CharEncoderModel
from entangle.modeling import encoders
from entangle.modeling.encoders import SHIPPED_CHAR, load_char_encoder
from entangle.options import ModelLoadError


@pytest.mark.parametrize("name", sorted(SHIPPED_CHAR))
def test_a_shipped_encoder_loads_offline_as_float32_with_its_card(name):
    encoder = load_char_encoder(name)
    assert isinstance(encoder, CharEncoderModel) and encoder.name_or_path == name
    assert all(p.dtype == torch.float32 for p in encoder.parameters())
    fresh = load_char_encoder("builtin")
    assert fresh.config.to_dict()["hidden_size"] == encoder.config.hidden_size  # the built-in family's width
    assert not torch.equal(fresh.embeddings[0].weight, encoder.embeddings[0].weight)
    card = (SHIPPED_CHAR[name] / "README.md").read_text()
    assert f"`{name}`" in card and "entangle pretrain-char" in card and "## Data" in card and "licence" in card


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_damaged_shipped_encoder_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys, damage):
    copy = tmp_path / "char-en"
    shutil.copytree(SHIPPED_CHAR["builtin-en"], copy)
    weights = copy / "model.safetensors"
    if damage == "missing":
        weights.unlink()
    else:
        weights.write_bytes(weights.read_bytes()[:1000])
    monkeypatch.setitem(encoders.SHIPPED_CHAR, "builtin-en", copy)
    with pytest.raises(ModelLoadError, match=f"{weights}: (missing|truncated or corrupt)"):
        load_char_encoder("builtin-en")
    (tmp_path / "train.txt").write_text("Paris\tB-LOC\n")
    with pytest.raises(SystemExit, match=f"entangle train: error: {weights}: (missing|truncated or corrupt)"):
        main(["train", "--train", str(tmp_path / "train.txt"), "--char", "builtin-en", "--output", str(tmp_path / "run")])
