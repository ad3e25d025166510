"""entangle: mutually informed character and subword representations (the entanglement model)."""

from . import modeling  # noqa: F401  (registers the model types with the transformers Auto classes)
