"""Where a model name points (a local directory or a Hugging Face hub name), and one-line errors
naming the file for what cannot be loaded.

A name that looks like a path (:func:`looks_local`) is never sent to the hub: a missing directory,
a missing or unreadable ``config.json``, a missing, truncated or corrupt weight file each raise a
:class:`ModelLoadError` that names the file. Any other name may be a hub name: the hub is asked
only after a quick check that it answers (:data:`HUB_CHECK_TIMEOUT_S`); when it does not, or under
``HF_HUB_OFFLINE=1``, the name is looked up in the local hub cache alone, so an unreachable hub
fails at once instead of after transformers' retries.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from safetensors import SafetensorError

from ..options import ModelLoadError

T = TypeVar("T")

#: Seconds the check that the hub answers may take before the hub counts as unreachable.
HUB_CHECK_TIMEOUT_S = 5.0
#: Weight files of a saved model, in the order transformers prefers them (the first is the one named when none is there).
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
CONFIG_FILE = "config.json"

# The hub's rule for repository names: ``name`` or ``owner/name``, letters, digits, ``_ - .``,
# neither starting nor ending with ``-`` or ``.``, at most 96 characters each.
_HUB_PART = r"[A-Za-z0-9_](?:[\w.-]{0,94}[A-Za-z0-9_])?"
_HUB_NAME = re.compile(rf"(?:{_HUB_PART}/)?{_HUB_PART}")


def looks_local(name: str | Path) -> bool:
    """Whether ``name`` is meant as a path: it exists (or its first directory does), it is absolute
    or starts with ``.`` or ``~``, it has a backslash or more than one ``/``, it ends with ``.json``,
    or it cannot be a hub name. Only the rest (``name``, ``owner/name``) may be a hub name."""
    if isinstance(name, Path):
        return True
    path = Path(name).expanduser()
    if (path.exists() or name.startswith((".", "~")) or path.is_absolute() or "\\" in name or name.count("/") > 1
            or name.endswith(".json")):
        return True
    if any(parent.exists() for parent in path.parents if str(parent) != "."):
        return True
    return not _HUB_NAME.fullmatch(name) or "--" in name or ".." in name


def local_dir(name: str | Path) -> Path:
    """The directory ``name`` names, or a :class:`ModelLoadError` saying why it is not one."""
    path = Path(name).expanduser()
    if not path.exists():
        raise ModelLoadError(f"{name}: no such directory")
    if not path.is_dir():
        hint = f" (give the model's directory, {path.parent})" if (path.parent / CONFIG_FILE).is_file() else ""
        raise ModelLoadError(f"{name}: not a directory{hint}")
    return path


def read_json(file: Path) -> dict:
    """A JSON object file; errors name the file (and the line of a syntax error)."""
    if not file.is_file():
        raise ModelLoadError(f"{file}: missing")
    try:
        values = json.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ModelLoadError(f"{file}: not UTF-8 text ({err.reason} at byte {err.start}): truncated or corrupt") from None
    except json.JSONDecodeError as err:
        raise ModelLoadError(f"{file}: not valid JSON (line {err.lineno}: {err.msg}): truncated or corrupt") from None
    if not isinstance(values, dict):
        raise ModelLoadError(f"{file}: not a configuration (expected a JSON object, found {type(values).__name__})")
    return values


def read_config(directory: Path, what: str) -> dict:
    """``directory/config.json``, read and checked before any model is built; ``what`` is what the
    directory should hold (``a saved entangle model``), for the message when it has no config."""
    file = directory / CONFIG_FILE
    if not file.is_file():
        raise ModelLoadError(f"{directory}: no {CONFIG_FILE}: not {what}")
    return read_json(file)


def weights_file(directory: Path) -> Path:
    """The weight file transformers will read from ``directory``; ``model.safetensors: missing`` when none is there."""
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return directory / name
    raise ModelLoadError(f"{directory / WEIGHT_FILES[0]}: missing")


@contextmanager
def reading_weights(file: Path | str) -> Iterator[None]:
    """Turn the errors of reading a weight file (safetensors', torch's) into one line naming it."""
    try:
        yield
    except SafetensorError as err:
        raise ModelLoadError(f"{file}: truncated or corrupt ({err})") from None
    except (EOFError, RuntimeError, OSError) as err:
        if isinstance(err, RuntimeError) and "ignore_mismatched_sizes" in str(err):  # transformers' shape check
            raise ModelLoadError(f"{file}: the weights' shapes do not fit the config.json beside them (an edited "
                                 "label list or size?)") from None
        if not str(file).endswith((".bin", ".bin.index.json")):
            raise
        raise ModelLoadError(f"{file}: truncated or corrupt ({first_line(err)})") from None


def refuse_missing_weights(loading_info: dict, file: Path | str) -> None:
    """A model whose weight file lacks tensors that its config asks for (an edited config.json, say)
    would run with random weights there, transformers only warning (which the commands silence)."""
    if missing := loading_info.get("missing_keys"):
        missing = sorted(missing)
        raise ModelLoadError(f"{file}: lacks {len(missing)} of the tensors the config.json beside it asks for "
                             f"(e.g. {missing[0]}): an edited config.json, or weights of another model?")


def load_tokenizer(directory: Path, **kwargs):
    """The tokenizer saved in ``directory``; a missing or unreadable ``tokenizer.json`` is named."""
    from transformers import AutoTokenizer

    file = directory / "tokenizer.json"
    try:
        tokenizer = AutoTokenizer.from_pretrained(directory, **kwargs)
    except Exception as err:  # tokenizers raises a bare Exception on a file it cannot parse
        if not isinstance(err, (OSError, ValueError)) and not file.is_file():
            raise
        problem = "missing" if not file.is_file() else f"truncated or corrupt ({first_line(err)})"
        raise ModelLoadError(f"{file}: {problem}") from None
    # Without tokenizer.json or another vocabulary file, transformers builds a tokenizer of the
    # special tokens alone, and every word became [UNK], silently.
    if len(tokenizer) <= len(set(tokenizer.all_special_ids)):
        raise ModelLoadError(f"{file}: missing" if not file.is_file()
                             else f"{file}: no vocabulary beyond its {len(tokenizer)} special tokens")
    return tokenizer


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0].rstrip(" .:") if text else type(error).__name__


def hub_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


@functools.cache
def hub_unreachable() -> str | None:
    """Why the hub does not answer (``None`` when it does), found within :data:`HUB_CHECK_TIMEOUT_S`."""
    from huggingface_hub.utils import get_session

    endpoint = hub_endpoint()
    try:
        response = get_session().head(endpoint, timeout=HUB_CHECK_TIMEOUT_S)
    except Exception as err:  # noqa: BLE001 - any failure to get an answer means: not reachable
        return f"{endpoint}: {first_line(err)}"
    if response.status_code >= 500:
        return f"{endpoint}: HTTP {response.status_code}"
    return None


def from_hub(name: str, load: Callable[..., T]) -> T:
    """``load(**kwargs)`` for a hub name, ``kwargs`` going to each ``from_pretrained`` it calls: from
    the hub when it answers, else at once from the local hub cache (``local_files_only``)."""
    from huggingface_hub import is_offline_mode

    if is_offline_mode():
        return _from_cache(name, load, "HF_HUB_OFFLINE is set")
    reason = hub_unreachable()
    if reason is not None:
        return _from_cache(name, load, f"the hub cannot be reached: {reason}")
    try:
        return load()
    except OSError as err:
        raise ModelLoadError(f"{name}: not a local directory, and the Hugging Face hub could not provide it "
                             f"({first_line(err)})") from None


def _from_cache(name: str, load: Callable[..., T], why: str) -> T:
    try:
        return load(local_files_only=True)
    except OSError:
        raise ModelLoadError(f"{name}: neither a local directory nor reachable on the Hugging Face hub ({why}), "
                             "and not in the local hub cache") from None
