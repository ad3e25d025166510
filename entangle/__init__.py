"""entangle: mutually informed character and subword representations (the entanglement model).

The short API: ``load_corpus`` reads a labelled corpus, ``Tagger`` builds, trains, evaluates,
saves, loads and applies a model.
"""

from . import modeling  # noqa: F401  (registers the model types with the transformers Auto classes)
from .data.corpus import Corpus, load_corpus
from .predict import TaggedSentence, Tagger

__all__ = ["Corpus", "TaggedSentence", "Tagger", "load_corpus"]
