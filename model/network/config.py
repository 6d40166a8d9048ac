"""Frozen, validated configuration dataclasses, stored beside every checkpoint."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, TypeGuard

# What a checkpoint's config may ask for, checked before any model is built (every config.json a user hands us
# goes through ModelConfig). Generous for real translation models: Marian opus-mt has a 58k vocabulary,
# d_model 512 and 6+6 layers; NLLB and mBART have ~256k pieces; a big model has d_model 1024-4096, d_ff 4x that.
MAX_VOCAB_SIZE = 262_144
MAX_D_MODEL = 4096
MAX_HEADS = 64
MAX_LAYERS = 48  # per stack (encoder, decoder)
MAX_D_FF = 16_384
MAX_MODEL_LEN = 4096  # ModelConfig.max_len (positions the model was built for)
# The model must fit in memory as float32 (how it runs): parameters plus the sinusoidal position table. NLLB-200-600M
# and mBART-large-50 take about 2.4 GB.
MAX_MODEL_BYTES = 3 * 2**30
LIMITS = {"vocab_size": MAX_VOCAB_SIZE, "d_model": MAX_D_MODEL, "n_heads": MAX_HEADS,
          "n_encoder_layers": MAX_LAYERS, "n_decoder_layers": MAX_LAYERS, "d_ff": MAX_D_FF, "max_len": MAX_MODEL_LEN}
# What a decode request may ask for, checked where it enters (CLI, API, app links): a beam wider than 16 buys
# nothing a lecture shows, α past 10 only overflows, and nothing decodes past the position table.
MAX_BEAM = 16
MAX_LENGTH_PENALTY = 10.0
MAX_TOP_K = 100
MAX_TEMPERATURE = 10.0
MAX_NO_REPEAT_NGRAM = 16
# How beam search divides a finished hypothesis' log-prob: GNMT's ((5 + |Y|) / 6)^α (the paper's setup, this
# project's models) or Hugging Face's |Y|^α (what generate() does, so a converted model's n-best is Hugging Face's).
LENGTH_PENALTY_FORMULAS = ("gnmt", "hf")
# When beam search stops once beam_size hypotheses have finished (model.decoding.beam_stopping): at once (True, this
# project's models), when no live beam beats the worst of them at its current length (False, generate()'s default), or
# at the
# length limit's penalty ("never").
EARLY_STOPPING = (True, False, "never")
POSITION_TABLE = 1024  # rows of the position table at least (model.network.positional.MAX_POSITIONS, tested equal)
# The options a real translation model (Marian opus-mt) needs beyond the paper; the first of each is the paper's.
# The FFN's non-linearity; swish is also called SiLU: x * sigmoid(x); gelu_tanh is GELU's tanh approximation (T5 v1.1's
# "gelu_new").
ACTIVATIONS = ("relu", "gelu", "swish", "gelu_tanh")
NORMS = ("layer", "rms")  # LayerNorm (the paper), or RMSNorm: no mean, no bias (T5)
# Sin/cos pairs interleaved (the paper), sin half then cos half (Marian), a learned table per stack (BART, mBART),
# sin half then cos half at fairseq's frequencies (M2M100, NLLB), or none added at all: a learned bias per head and
# bucket of relative offsets enters every self-attention's scores instead (T5).
POSITIONAL_LAYOUTS = ("interleaved", "halves", "learned", "fairseq", "relative")
MAX_RELATIVE_BUCKETS, MAX_RELATIVE_DISTANCE = 1024, 65536
# One joint sentencepiece model, Marian's source/target models + vocab, a Hugging Face tokenizer.json (BART's
# byte-level BPE, mBART's sentencepiece with language codes) read by the tokenizers package, or M2M100's sentencepiece
# model + vocab.json with its language codes (a folder without tokenizer.json).
TOKENIZERS = ("sentencepiece", "marian", "hf", "m2m100")
MAX_POSITION_OFFSET = 16  # rows a position table keeps before position 0 (BART, mBART, M2M100 and NLLB: 2)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_early_stopping(value: Any) -> bool:
    """One of EARLY_STOPPING: True, False or "never" (0 and 1 are not booleans here)."""
    return isinstance(value, bool) or value == "never"


def require_positive_ints(owner: str, **values: Any) -> None:
    """Each value an int >= 1 (bool is not an int here), else a ValueError naming ``owner.name``."""
    for name, value in values.items():
        if not _is_int(value) or value < 1:
            raise ValueError(f"{owner}.{name} must be a positive integer, got {value!r}")


def require_dropout(value: Any) -> None:
    """A dropout probability in [0, 1) (bool is not a number here), else a ValueError: the text and vision configs
    read it from config.json alike."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0.0 <= value < 1.0:
        raise ValueError(f"dropout must be a number in [0, 1), got {value!r}")


def known_keys(cls: type, data: Any) -> dict[str, Any]:
    """``data`` checked to be a JSON object holding only field names of the dataclass ``cls`` (unknown keys named,
    instead of a TypeError from the constructor)."""
    if not isinstance(data, dict):
        raise ValueError(f"the {cls.__name__} config must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - {f.name for f in fields(cls)})
    if unknown:
        raise ValueError(f"unknown {cls.__name__} keys: {', '.join(repr(str(k)[:40]) for k in unknown[:5])}"
                         f"{'...' if len(unknown) > 5 else ''}")
    return data


def format_bytes(n: int) -> str:
    """A size for a message: "22 bytes", "3.1 kB", "12 GB"."""
    for unit, scale in (("EB", 2**60), ("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}" if n < 10 * scale else f"{n / scale:.0f} {unit}"
    return f"{n} byte{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class ModelConfig:
    """Shape of an encoder-decoder Transformer (the paper's base model is d_model 512, 8 heads, 6+6, d_ff 2048).

    The vocabulary is joint (source and target share one embedding matrix), so a single
    ``vocab_size`` and one set of special ids describe both sides.

    ``bos_id`` is the token every decoder input starts with, here and everywhere that builds "BOS + output[:-1]";
    ``decoder_start_id`` names it (it defaults to, and must equal, bos_id). The project's sentencepiece vocabulary has
    four distinct specials; Marian's has no BOS piece and starts the decoder with <pad>, so a "marian" tokenizer's
    bos_id is its pad_id; BART's decoder starts with </s>, so an "hf" tokenizer's bos_id may be its eos_id. The options
    after eos_id default to the paper's choice, so older config.json files load as they are: Marian opus-mt uses swish,
    "halves" positions, a final logits bias and the "marian" tokenizer; BART learned positions (offset 2), GELU, no
    embedding scale, a LayerNorm on the embeddings and the "hf" tokenizer; mBART the same, pre-norm and scaled.
    """

    vocab_size: int
    d_model: int = 256
    n_heads: int = 8
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 1024
    dropout: float = 0.1
    max_len: int = 256
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3
    norm_first: bool = False  # False = the paper's post-norm LayerNorm(x + Dropout(Sublayer(x)))
    activation: str = "relu"  # one of ACTIVATIONS
    positional_layout: str = "interleaved"  # one of POSITIONAL_LAYOUTS
    final_logits_bias: bool = False  # logits = h E^T + b with a learned b [vocab_size] (Marian's final_logits_bias)
    decoder_start_id: int | None = None  # None = bos_id
    tokenizer: str = "sentencepiece"  # one of TOKENIZERS: which tokenizer files the checkpoint holds
    # BART's family: no sqrt(d_model) scale on the embedding, a LayerNorm on each stack's embedding sum, and positions
    # read from row position + position_offset (fairseq's models keep 2 unused rows, the pad id's legacy).
    scale_embedding: bool = True
    layernorm_embedding: bool = False
    position_offset: int = 0
    # T5's family: heads of their own width (head_dim x n_heads may differ from d_model), RMSNorm, no biases in the
    # linear maps, QK^T not divided by sqrt(d_k), a gated FFN, an output layer of its own (or the tied one read from
    # hidden x d_model^-0.5), and relative position buckets instead of a position table.
    head_dim: int | None = None  # None = d_model / n_heads
    norm: str = "layer"  # one of NORMS
    norm_eps: float = 1e-5
    linear_bias: bool = True
    attention_scale: bool = True
    ffn_gated: bool = False  # FFN(x) = (act(x W1) * x W_gate) W2
    tie_output: bool = True
    rescale_output: bool = False
    relative_buckets: int = 32
    relative_max_distance: int = 128

    def __post_init__(self) -> None:
        """Types, ranges, consistency and the size limits above, so that nothing absurd is ever allocated."""
        if self.decoder_start_id is None:
            object.__setattr__(self, "decoder_start_id", self.bos_id)
        require_positive_ints("ModelConfig", **{name: getattr(self, name) for name in LIMITS})
        for name, limit in LIMITS.items():
            value = getattr(self, name)
            if value > limit:
                raise ValueError(f"ModelConfig.{name} is {value}, more than the limit of {limit}")
        if self.head_dim is not None:
            require_positive_ints("ModelConfig", head_dim=self.head_dim)
            if self.head_dim * self.n_heads > MAX_D_MODEL:
                raise ValueError(f"head_dim x n_heads is {self.head_dim * self.n_heads}, more than {MAX_D_MODEL}")
        elif self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        require_positive_ints("ModelConfig", relative_buckets=self.relative_buckets,
                              relative_max_distance=self.relative_max_distance)
        if self.relative_buckets > MAX_RELATIVE_BUCKETS or self.relative_max_distance > MAX_RELATIVE_DISTANCE:
            raise ValueError(f"relative_buckets and relative_max_distance may be at most {MAX_RELATIVE_BUCKETS} and "
                             f"{MAX_RELATIVE_DISTANCE}, got {self.relative_buckets} and {self.relative_max_distance}")
        if not isinstance(self.norm_eps, float) or not 0.0 < self.norm_eps < 1.0:
            raise ValueError(f"norm_eps must be a number in (0, 1), got {self.norm_eps!r}")
        if self.d_model % 2:
            raise ValueError(f"d_model must be even (sinusoidal positions come in sin/cos pairs), got {self.d_model}")
        require_dropout(self.dropout)
        for name in ("norm_first", "final_logits_bias", "scale_embedding", "layernorm_embedding", "linear_bias",
                     "attention_scale", "ffn_gated", "tie_output", "rescale_output"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name, allowed in (("activation", ACTIVATIONS), ("positional_layout", POSITIONAL_LAYOUTS),
                              ("tokenizer", TOKENIZERS), ("norm", NORMS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {str(getattr(self, name))[:40]!r}")
        if not _is_int(self.position_offset) or not 0 <= self.position_offset <= MAX_POSITION_OFFSET:
            raise ValueError(f"position_offset must be an integer from 0 to {MAX_POSITION_OFFSET}, "
                             f"got {self.position_offset!r}")
        self._check_special_ids()
        if self.estimated_bytes() > MAX_MODEL_BYTES:
            raise ValueError(f"this config describes {self.estimated_parameters():,} parameters "
                             f"({format_bytes(self.estimated_bytes())} as float32), more than the limit of "
                             f"{format_bytes(MAX_MODEL_BYTES)}")

    def _check_special_ids(self) -> None:
        """Ids in the vocabulary; pad, unk, eos (and the sentencepiece vocabulary's BOS) distinct; the decoder
        starts with bos_id, which a Marian vocabulary (no BOS piece) sets to its pad id."""
        specials = {"pad_id": self.pad_id, "unk_id": self.unk_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        for name, value in {**specials, "decoder_start_id": self.decoder_start_id}.items():
            if not _is_int(value) or not 0 <= value < self.vocab_size:
                raise ValueError(f"{name} must be an id in [0, {self.vocab_size}), got {value!r}")
        distinct = specials if self.tokenizer == "sentencepiece" else \
            {k: v for k, v in specials.items() if k != "bos_id"}  # the start token may be <pad> or </s>
        if len(set(distinct.values())) != len(distinct):
            raise ValueError(f"special ids must be distinct, got {distinct}")
        if self.tokenizer == "marian" and self.bos_id != self.pad_id:
            raise ValueError(f"a marian vocabulary has no BOS piece: bos_id must be the pad id {self.pad_id} its "
                             f"decoder starts with, got {self.bos_id}")
        if self.decoder_start_id != self.bos_id:
            raise ValueError(f"decoder_start_id must equal bos_id ({self.bos_id}), got {self.decoder_start_id}: "
                             "every decoder input starts with bos_id")

    def estimated_parameters(self) -> int:
        """How many parameters Transformer(self) holds, computed without building it (tested equal to
        transformer.count_parameters): what the size limit is checked against before anything is allocated."""
        d, f, inner, b = self.d_model, self.d_ff, self.n_heads * self.d_k, int(self.linear_bias)
        attention = 3 * (d * inner + b * inner) + inner * d + b * d
        feed_forward = (2 if self.ffn_gated else 1) * (d * f + b * f) + f * d + b * d
        norm = d if self.norm == "rms" else 2 * d
        encoder_layer = attention + feed_forward + 2 * norm
        decoder_layer = 2 * attention + feed_forward + 3 * norm
        final_norms = 2 * norm if self.norm_first else 0
        logits_bias = self.vocab_size if self.final_logits_bias else 0
        learned = 2 * self.position_table * d if self.positional_layout == "learned" else 0  # one table per stack
        embedding_norms = 2 * 2 * d if self.layernorm_embedding else 0
        relative = 2 * self.relative_buckets * self.n_heads if self.positional_layout == "relative" else 0
        output = 0 if self.tie_output else self.vocab_size * d
        return (self.vocab_size * d + self.n_encoder_layers * encoder_layer + self.n_decoder_layers * decoder_layer
                + final_norms + logits_bias + learned + embedding_norms + relative + output)

    def estimated_bytes(self) -> int:
        """Memory of the built model in float32: its parameters and its sinusoidal position table."""
        sinusoids = 0 if self.positional_layout in ("learned", "relative") else self.position_table * self.d_model
        return 4 * (self.estimated_parameters() + sinusoids)

    @property
    def position_table(self) -> int:
        """Rows of each position table, position_offset unused rows included: sinusoids extend past max_len (to
        POSITION_TABLE positions at least); a learned table has max_len positions."""
        if self.positional_layout == "learned":
            return self.max_len + self.position_offset
        return max(self.max_len, POSITION_TABLE) + self.position_offset

    @property
    def position_limit(self) -> int:
        """The longest sequence (source, or start token + output) the model can read at all: a learned table has
        no row past max_len, sinusoids run to the position table's end."""
        return self.position_table - self.position_offset

    @property
    def d_k(self) -> int:
        """Width of one head's queries and keys (d_v is the same): d_model / n_heads, or the config's head_dim."""
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Rebuild from JSON, naming unknown or missing keys instead of failing with a TypeError."""
        if not isinstance(data, dict):
            raise ValueError(f"the model config must be a JSON object, got {type(data).__name__}")
        data = known_keys(cls, data)
        if "vocab_size" not in data:
            raise ValueError("ModelConfig needs vocab_size")
        return cls(**data)


@dataclass(frozen=True)
class Sampling:
    """Sampling the next piece instead of searching (the decoding a GPT-style demo uses): the model's distribution is
    divided by ``temperature`` in log space (0 = always the most probable piece, i.e. greedy), cut to the ``top_k``
    most probable pieces (0 = no cut) and to the smallest set whose probability reaches ``top_p`` (1 = no cut),
    renormalised, and one piece is drawn with a generator seeded by ``seed`` (the same seed, the same sample)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        checks = (("temperature", self.temperature, 0.0, MAX_TEMPERATURE), ("top_p", self.top_p, 0.0, 1.0))
        for name, value, low, high in checks:
            if not isinstance(value, (int, float)) or not low <= value <= high:  # NaN fails too
                raise ValueError(f"{name} must be a number from {low:g} to {high:g}, got {value!r}")
        if self.top_p == 0:
            raise ValueError("top_p must be above 0 (1 keeps every piece)")
        if not isinstance(self.top_k, int) or not 0 <= self.top_k <= MAX_VOCAB_SIZE:
            raise ValueError(f"top_k must be an integer from 0 (no cut) to {MAX_VOCAB_SIZE}, got {self.top_k!r}")
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise ValueError(f"seed must be an integer from 0 to 2**63 - 1, got {self.seed!r}")


@dataclass(frozen=True)
class DecodeConfig:
    """How to search for a translation.

    ``max_len`` counts generated tokens, EOS included. ``length_penalty`` is GNMT's alpha
    (0 = rank hypotheses by raw log-probability). ``top_k`` is how many next-token
    probabilities each step reports for display; it does not change the search. ``sampling`` draws each
    next piece instead (one hypothesis: beam_size must be 1). ``forced_eos``: the piece at the length limit is EOS
    whatever the model prefers, adding 0 to the log-prob, as Hugging Face's generate() does for a config with
    forced_eos_token_id (Marian's); without it a hypothesis cut at max_len ends without EOS (the paper's way).
    ``forced_bos``: the id every output starts with, also at log-prob 0, as generate() does for forced_bos_token_id
    (BART-large's <s>; mBART's, M2M100's and NLLB's target-language code). ``no_repeat_ngram``: n > 0 rules out
    any piece that would repeat an n-gram already in the hypothesis (its start token included), as generate() does
    for no_repeat_ngram_size (BART-large-CNN's 3). ``length_penalty_formula``: "gnmt" ranks finished hypotheses by
    log P / ((5 + |Y|) / 6)^α, "hf" by log P / |Y|^α as generate() does (a converted model's own rule).
    ``early_stopping``: when beam search stops once beam_size hypotheses have finished, generate()'s rule of that name
    (model.decoding.beam_stopping): True at once (this project's models), False or "never" while a live beam could
    still beat
    one of them. ``keep_words``: the output must keep the source's names and numbers verbatim
    (model.decoding.copy_words picks
    them, model.decoding.constrained_beam searches for an output that writes them all); beam search only.
    """

    beam_size: int = 1
    max_len: int = 64
    length_penalty: float = 0.6
    top_k: int = 10
    sampling: Sampling | None = None
    forced_eos: bool = False
    forced_bos: int | None = None
    no_repeat_ngram: int = 0
    length_penalty_formula: str = "gnmt"  # one of LENGTH_PENALTY_FORMULAS
    early_stopping: bool | str = True  # one of EARLY_STOPPING
    keep_words: bool = False

    def __post_init__(self) -> None:
        for name, high in (("beam_size", MAX_BEAM), ("max_len", POSITION_TABLE - 1), ("top_k", MAX_TOP_K)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
                raise ValueError(f"{name} must be an integer from 1 to {high}, got {value!r}")
        alpha = self.length_penalty
        if not isinstance(alpha, (int, float)) or not 0 <= alpha <= MAX_LENGTH_PENALTY:  # NaN fails both
            raise ValueError(f"length_penalty must be a number from 0 to {MAX_LENGTH_PENALTY:g}, got {alpha!r}")
        if not isinstance(self.forced_eos, bool):
            raise ValueError(f"forced_eos must be true or false, got {self.forced_eos!r}")
        if self.forced_bos is not None and (not _is_int(self.forced_bos) or not 0 <= self.forced_bos < MAX_VOCAB_SIZE):
            raise ValueError(f"forced_bos must be a piece id or None, got {self.forced_bos!r}")
        if self.length_penalty_formula not in LENGTH_PENALTY_FORMULAS:
            raise ValueError(f"length_penalty_formula must be one of {', '.join(LENGTH_PENALTY_FORMULAS)}, "
                             f"got {str(self.length_penalty_formula)[:20]!r}")
        if not _is_int(self.no_repeat_ngram) or not 0 <= self.no_repeat_ngram <= MAX_NO_REPEAT_NGRAM:
            raise ValueError(f"no_repeat_ngram must be an integer from 0 (off) to {MAX_NO_REPEAT_NGRAM}, "
                             f"got {self.no_repeat_ngram!r}")
        if not is_early_stopping(self.early_stopping):
            raise ValueError(f"early_stopping must be true, false or 'never', got {str(self.early_stopping)[:20]!r}")
        if not isinstance(self.keep_words, bool):
            raise ValueError(f"keep_words must be true or false, got {str(self.keep_words)[:20]!r}")
        if self.keep_words and (self.beam_size == 1 or self.sampling is not None):
            raise ValueError("keeping names and numbers needs beam search: a beam of 2 or more, no sampling")
        if self.sampling is not None and self.beam_size != 1:
            raise ValueError(f"sampling draws one hypothesis: beam_size must be 1, got {self.beam_size}")
