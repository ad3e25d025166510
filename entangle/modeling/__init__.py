"""Encoders, co-attention and heads; registered with the transformers Auto classes on import."""

from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoModelForTokenClassification

from .char_encoder import CharEncoderConfig, CharEncoderModel
from .charbert import CharBertModel
from .configuration import EntangleConfig
from .modeling_entangle import EntangleForSequenceClassification, EntangleForTokenClassification, EntangleModel

AutoConfig.register(CharEncoderConfig.model_type, CharEncoderConfig)
AutoModel.register(CharEncoderConfig, CharEncoderModel)
AutoConfig.register(EntangleConfig.model_type, EntangleConfig)
AutoModel.register(EntangleConfig, EntangleModel)
AutoModelForTokenClassification.register(EntangleConfig, EntangleForTokenClassification)
AutoModelForSequenceClassification.register(EntangleConfig, EntangleForSequenceClassification)

__all__ = [
    "CharBertModel",
    "CharEncoderConfig",
    "CharEncoderModel",
    "EntangleConfig",
    "EntangleForSequenceClassification",
    "EntangleForTokenClassification",
    "EntangleModel",
]
