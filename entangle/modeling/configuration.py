"""Configuration of the entanglement model."""

from __future__ import annotations

from transformers import AutoConfig, PreTrainedConfig

from ..options import (BUILTIN_CHAR_MODEL_TYPE, DEFAULT_COATTENTION_LAYERS, FUSIONS, SIDES, ConfigError,
                       isolate_sides_by_default, trained_sides)
from ..tasks import get_task

#: Subword encoders whose layers CharBERT can run itself: BERT's embeddings + ``encoder.layer``
#: structure and call signature, post-layer-norm, nothing after the last layer.
CHARBERT_ENCODER_TYPES = ("bert", "roberta", "xlm-roberta", "camembert")


def encoders_needed(num_coattention_layers: int, side: str) -> tuple[bool, bool]:
    """(character encoder needed, subword encoder needed): co-attention needs both, a head its own."""
    return num_coattention_layers > 0 or side != "subword", num_coattention_layers > 0 or side != "char"


def _sub_config(value: PreTrainedConfig | dict | None, key: str, default_model_type: str) -> PreTrainedConfig | None:
    """An encoder's config from what a caller or a saved ``config.json`` gives: a config as it is, a dict
    as the config of its ``model_type`` (``default_model_type`` without one), ``None`` for no encoder."""
    if value is None or isinstance(value, PreTrainedConfig):
        return value
    if isinstance(value, dict):
        values = dict(value)
        return AutoConfig.for_model(values.pop("model_type", default_model_type), **values)
    raise TypeError(f"`{key}` must be a `dict`, `PreTrainedConfig`, or `None`, got `{type(value)}`")


class EntangleConfig(PreTrainedConfig):
    r"""
    Configuration of the entanglement model: two encoders, co-attention, heads.

    The two encoders' own configs are stored inside this one, so a saved model rebuilds its
    architecture without the hub; the encoders' names are kept for the model card only.

    Args:
        char_config (`dict` or `PreTrainedConfig`, *optional*):
            Config of the character encoder (CANINE or the built-in `entangle-char`). `None` when
            the model is subword-only (`num_coattention_layers=0`, `side="subword"`).
        subword_config (`dict` or `PreTrainedConfig`, *optional*):
            Config of the subword encoder (any `AutoModel`). `None` for a character-only model.
        char_encoder_name, subword_encoder_name (`str`, *optional*):
            Where each encoder's weights came from (hub name or path), for the model card.
        char_encoder_pretrained, subword_encoder_pretrained (`bool`, defaults to `True`):
            Whether the encoder started from pretrained weights. A randomly initialised encoder
            (the built-in character encoder) trains with the learning rate of the new layers.
        num_coattention_layers (`int`, defaults to 2):
            `m`, the number of co-attention modules per side; 0 gives the backbones alone.
        hidden_size (`int`, *optional*):
            Width of the co-attention modules. Defaults to the subword encoder's width; each side
            is linearly projected to it when its width differs.
        num_attention_heads (`int`, *optional*):
            Heads of the co-attention modules; defaults to the subword encoder's.
        intermediate_size (`int`, *optional*):
            Feed-forward width of the co-attention modules; defaults to 4 x `hidden_size`.
        char_downsample (`int`, defaults to 1):
            K: the character states entering the co-attention are shortened K-fold (a strided
            convolution) and restored to one per character for the heads
            (`modeling/downsampling.py`); 1 keeps every character.
        coattention_init (`str`, *optional*):
            A directory written by `entangle pretrain-coattention`: the projections and
            co-attention modules of a new model start from its weights (the paper's MLM
            pretraining of the co-attention). Kept in the config as provenance.
        positional_alignment (`bool`, defaults to `False`):
            Before the co-attention, tell each character which subword it belongs to and each
            subword its character span, as learned embeddings added to both sides
            (`modeling/positional_alignment.py`; one of the paper's proposed extensions).
        alignment_bias (`bool`, defaults to `False`):
            Each co-attention module's cross-attention adds a learned bonus per head (starting at
            2) to the score of each character and the subword that spells it, in both directions
            (`modeling/coattention.py`); with `char_downsample` K, each shortened position and the
            subwords that spell any of its K characters.
        hidden_dropout_prob, attention_probs_dropout_prob, classifier_dropout (`float`):
            Dropout in the co-attention blocks, on attention weights, and before the heads.
        side (`str`, defaults to `"both"`):
            Which heads are trained: `subword`, `char` or `both` (sum of the two losses).
        isolate_sides (`bool`, *optional*):
            With `side="both"`: each side reads the other side's states without passing gradients
            back, so each head's loss trains only its own side (encoder, co-attention, head), as if
            each side were trained alone, in one run. Without it the character head's loss also
            trains the subword encoder, which costs the subword side (benchmarks/RESULTS.md).
            Defaults to `True` when both heads train through co-attention, `False` otherwise.
        predict_side (`str`, *optional*):
            Which head gives predictions; defaults to `side` (or `subword` for `both`). `joint` (with
            `side="both"`) predicts from the joint head and implies `joint_head`.
        joint_head (`bool`, defaults to `False`):
            With `side="both"`: also train a head that reads both sides at once (a word's
            first-subword state and first-character state concatenated, a text's two first
            positions), then a linear layer. With isolated sides it reads them detached, so it
            trains beside the side heads without changing them.
        char_distill (`float`, defaults to 0):
            With `side="both"`: weight of a second loss for the character head, the KL divergence
            from the joint head's predicted distribution (the subword head's without a joint head),
            detached, to its own. The character side learns more slowly than the subword side; the
            teacher gives it a full distribution per word instead of a single gold label.
        max_chars (`int`, *optional*):
            Longest character window, start/end markers included. Longer sentences are split
            into overlapping windows. Defaults to the character encoder's limit.
        max_subwords (`int`, *optional*):
            Longest subword window, special tokens included. Defaults to the subword encoder's limit.
        task (`str`, defaults to `"ner"`):
            `ner` (IOB2 tags, entity F1), `tagging` (any tag per word, token accuracy),
            `char-tagging` (a label per character, character side only) or `classification`
            (a label per text); see `entangle.tasks`.
        fusion (`str`, defaults to `"coattention"`):
            `coattention` (the entanglement model) or `charbert` (Ma et al. 2020: a character
            channel fed through the subword encoder's layers, fused after each; no character
            encoder, `num_coattention_layers=0`, `side="subword"`, head on both channels).
        char_embedding_size (`int`, defaults to 256):
            CharBERT: width of the hashed character embeddings.
        char_gru_size (`int`, *optional*):
            CharBERT: width of each direction of the character GRU. Defaults to `hidden_size // 4`,
            so a subword's first and last character states together are `hidden_size` wide.
        char_hash_buckets (`int`, defaults to 8192):
            CharBERT: rows of each of the two hashed character embedding tables.
        fusion_kernel_size (`int`, defaults to 3):
            CharBERT: width (odd) of the convolution over positions that fuses the two channels.
    """

    model_type = "entangle"
    # A class with its own __init__ rather than a dataclass (as transformers' own configs are since a
    # later 5.x release), so that every transformers 5 release runs it. sub_configs tells transformers
    # which attributes are nested configs (it passes the attention implementation down to them).
    sub_configs = {"char_config": AutoConfig, "subword_config": AutoConfig}
    # EntangleConfig() is no model (m=2 needs both encoders' configs): transformers before 5.20 would
    # build one to find which values are defaults when it writes config.json.
    has_no_defaults_at_init = True
    # Equal when all values are, as for transformers' own configs (a dataclass's __eq__, which later
    # transformers would give this class, compares only the fields of PreTrainedConfig).
    __eq__ = PreTrainedConfig.__eq__

    def __init__(
        self,
        *,
        char_config: PreTrainedConfig | dict | None = None,
        subword_config: PreTrainedConfig | dict | None = None,
        char_encoder_name: str | None = None,
        subword_encoder_name: str | None = None,
        char_encoder_pretrained: bool = True,
        subword_encoder_pretrained: bool = True,
        num_coattention_layers: int = DEFAULT_COATTENTION_LAYERS,
        hidden_size: int | None = None,
        num_attention_heads: int | None = None,
        intermediate_size: int | None = None,
        char_downsample: int = 1,
        positional_alignment: bool = False,
        alignment_bias: bool = False,
        coattention_init: str | None = None,
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        classifier_dropout: float = 0.1,
        layer_norm_eps: float = 1e-12,
        initializer_range: float = 0.02,
        side: str = "both",
        isolate_sides: bool | None = None,
        predict_side: str | None = None,
        max_chars: int | None = None,
        max_subwords: int | None = None,
        task: str = "ner",
        fusion: str = "coattention",
        char_embedding_size: int = 256,
        char_gru_size: int | None = None,
        char_hash_buckets: int = 8192,
        fusion_kernel_size: int = 3,
        joint_head: bool = False,
        char_distill: float = 0.0,
        **kwargs,
    ):
        # The nested configs first: PreTrainedConfig.__init__ sets the attention implementation on them.
        self.char_config = _sub_config(char_config, "char_config", BUILTIN_CHAR_MODEL_TYPE)
        self.subword_config = _sub_config(subword_config, "subword_config", "bert")
        self.char_encoder_name = char_encoder_name
        self.subword_encoder_name = subword_encoder_name
        self.char_encoder_pretrained = char_encoder_pretrained
        self.subword_encoder_pretrained = subword_encoder_pretrained
        self.num_coattention_layers = num_coattention_layers
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.char_downsample = char_downsample
        self.positional_alignment = positional_alignment
        self.alignment_bias = alignment_bias
        self.coattention_init = coattention_init
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.classifier_dropout = classifier_dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.side = side
        self.isolate_sides = isolate_sides
        self.predict_side = predict_side
        self.max_chars = max_chars
        self.max_subwords = max_subwords
        self.task = task
        self.fusion = fusion
        self.char_embedding_size = char_embedding_size
        self.char_gru_size = char_gru_size
        self.char_hash_buckets = char_hash_buckets
        self.fusion_kernel_size = fusion_kernel_size
        self.joint_head = joint_head
        self.char_distill = char_distill
        super().__init__(**kwargs)
        self._complete()

    def _complete(self) -> None:
        """Checks the options against each other and fills in the defaults that depend on others."""
        if self.side not in SIDES:
            raise ConfigError(f"side must be one of {SIDES}, got {self.side!r}")
        if self.predict_side is None:
            self.predict_side = "subword" if self.side == "both" else self.side
        if self.predict_side == "joint":
            self.joint_head = True
        if self.joint_head and self.side != "both":
            raise ConfigError(f"the joint head reads both sides: it needs side='both', got side={self.side!r}")
        if self.predict_side not in self.trained_sides:
            raise ConfigError(f"predict_side {self.predict_side!r} is not among the trained sides of side={self.side!r}")
        if self.char_distill < 0:
            raise ConfigError(f"char_distill is a loss weight: it must be >= 0, got {self.char_distill}")
        if self.char_distill and self.side != "both":
            raise ConfigError(f"char_distill teaches the character head from the other heads: it needs side='both', "
                              f"got side={self.side!r}")
        if self.isolate_sides is None:
            self.isolate_sides = isolate_sides_by_default(self.side, self.num_coattention_layers)
        if self.isolate_sides and (self.side != "both" or not self.num_coattention_layers):
            raise ConfigError(f"isolate_sides separates the two heads' losses: it needs side='both' and co-attention "
                              f"(m > 0), got side={self.side!r}, m={self.num_coattention_layers}")
        task_sides = get_task(self.task).sides
        if not set(self.trained_sides) - {"joint"} <= set(task_sides):
            raise ConfigError(f"the {self.task} task is predicted from the {' or '.join(task_sides)} side "
                              f"only, not side={self.side!r}")
        if self.num_coattention_layers < 0:
            raise ConfigError("num_coattention_layers must be >= 0")
        if self.char_downsample < 1:
            raise ConfigError(f"char_downsample must be >= 1, got {self.char_downsample}")
        if self.char_downsample > 1 and not (self.num_coattention_layers and self.uses_char):
            raise ConfigError(f"char_downsample shortens the characters the co-attention reads: it needs "
                              f"co-attention (m > 0), got m={self.num_coattention_layers}")
        if self.positional_alignment and not self.num_coattention_layers:
            raise ConfigError("positional_alignment tells the co-attention which characters spell which subword: "
                              f"it needs co-attention (m > 0), got m={self.num_coattention_layers}")
        if self.alignment_bias and not self.num_coattention_layers:
            raise ConfigError("alignment_bias favours aligned pairs in the co-attention: it needs co-attention (m > 0), "
                              f"got m={self.num_coattention_layers}")
        if self.positional_alignment and (self.max_chars is None or self.max_subwords is None):
            raise ConfigError("positional_alignment has a position per character and per subword: it needs "
                              "max_chars and max_subwords")
        if self.coattention_init and not self.num_coattention_layers:
            raise ConfigError(f"coattention_init starts the co-attention from pretrained weights: it needs "
                              f"co-attention (m > 0), got m={self.num_coattention_layers}")
        if self.fusion not in FUSIONS:
            raise ConfigError(f"fusion must be one of {FUSIONS}, got {self.fusion!r}")
        if self.fusion == "charbert" and (self.num_coattention_layers or self.side != "subword"):
            raise ConfigError(
                "fusion='charbert' joins characters inside the subword encoder: it needs "
                f"num_coattention_layers=0 (-m 0) and side='subword', got m={self.num_coattention_layers}, side={self.side!r}"
            )
        if self.uses_char and self.char_config is None:
            raise ConfigError("this model needs a character encoder config (char_config)")
        if self.uses_subword and self.subword_config is None:
            raise ConfigError("this model needs a subword encoder config (subword_config)")
        reference = self.subword_config if self.subword_config is not None else self.char_config
        if self.hidden_size is None:
            self.hidden_size = reference.hidden_size
        if self.num_attention_heads is None:
            self.num_attention_heads = getattr(reference, "num_attention_heads", 8)
        if self.intermediate_size is None:
            self.intermediate_size = 4 * self.hidden_size
        for name in ("hidden_size", "num_attention_heads", "intermediate_size"):
            if self.num_coattention_layers and getattr(self, name) < 1:
                raise ConfigError(f"the co-attention's {name} must be at least 1, got {getattr(self, name)}")
        if self.num_coattention_layers and self.hidden_size % self.num_attention_heads:
            raise ConfigError(f"the co-attention width ({self.hidden_size}) must be a multiple of its heads "
                              f"({self.num_attention_heads})")
        if self.fusion == "charbert":
            self._check_charbert()

    def _check_charbert(self) -> None:
        if self.subword_config.model_type not in CHARBERT_ENCODER_TYPES:
            raise ConfigError(f"fusion='charbert' needs a BERT-like subword encoder ({', '.join(CHARBERT_ENCODER_TYPES)}), "
                              f"got a {self.subword_config.model_type!r} model")
        if self.hidden_size != self.subword_config.hidden_size:
            raise ConfigError(f"fusion='charbert' runs at the subword encoder's width ({self.subword_config.hidden_size}), "
                              f"got hidden_size={self.hidden_size}")
        if self.char_gru_size is None:
            self.char_gru_size = max(1, self.hidden_size // 4)
        if self.fusion_kernel_size < 1 or self.fusion_kernel_size % 2 == 0:
            raise ConfigError(f"fusion_kernel_size must be odd (the fused sequence keeps its length), got {self.fusion_kernel_size}")

    @property
    def trained_sides(self) -> tuple[str, ...]:
        """The heads trained: each side's, and ``joint`` with a joint head."""
        return trained_sides(self.side, self.joint_head)

    @property
    def uses_char(self) -> bool:
        return encoders_needed(self.num_coattention_layers, self.side)[0]

    @property
    def uses_subword(self) -> bool:
        return encoders_needed(self.num_coattention_layers, self.side)[1]

    @property
    def uses_subword_char_spans(self) -> bool:
        """Whether the model reads each subword's first and last character (CharBERT, positional alignment,
        alignment bias)."""
        return self.fusion == "charbert" or self.positional_alignment or self.alignment_bias
