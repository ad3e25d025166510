"""entangle: mutually informed character and subword representations (the entanglement model).

The short API: ``load_corpus`` reads a labelled corpus, ``Tagger`` builds, trains, evaluates,
saves, loads and applies a model.

Every command imports this file first (``entangle --help`` too), so the names are imported when first
used: torch and transformers load with ``Tagger``, not before. Importing ``entangle.modeling`` (as
``Tagger`` does) registers the model types with the transformers Auto classes.
"""

from importlib import import_module

_HOMES = {"Corpus": ".data.corpus", "load_corpus": ".data.corpus", "TaggedSentence": ".predict", "Tagger": ".predict"}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
