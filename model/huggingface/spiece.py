"""T5's sentencepiece model (spiece.model, a folder without tokenizer.json: t5-small as older save_pretrained wrote it)
turned into the tokenizer.json that transformers' T5Tokenizer builds of it, so that a converted T5 reads its text as
transformers does and the checkpoint holds a tokenizer.json like every other converted T5.

The pieces keep their sentencepiece ids (<pad> 0, </s> 1, <unk> 2, then the model's pieces, scored as trained); the
``extra_ids`` sentinels <extra_id_N> follow in reverse order (<extra_id_0> last); the text is normalized by the model's
own character map, split on whitespace, each word read with a leading "▁" by the unigram model, and a source ends with
</s>. The special pieces written in a text (<pad>, </s>, <unk>, the sentinels) are kept whole. Only the tokenizers
package and sentencepiece's own description of its file are used (transformers is the tests' reference).
"""
from __future__ import annotations

from sentencepiece import sentencepiece_model_pb2
from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import Unigram

from model.tokenization.pieces import TokenizerError, settings_of

SPIECE_FILE = "spiece.model"
T5_SPECIALS = ("<pad>", "</s>", "<unk>")  # T5's ids 0, 1, 2
DEFAULT_EXTRA_IDS = 100  # T5Tokenizer's default: t5-small's 32000 pieces + 100 sentinels
MAX_EXTRA_IDS = 1000
UNIGRAM = 1  # sentencepiece's TrainerSpec.model_type of a unigram model (T5's)
CONTROL, USER_DEFINED = 3, 4  # sentencepiece's piece types kept whole (special or not), as transformers keeps them


def extra_ids_of(tokenizer_config: bytes | None) -> int:
    """tokenizer_config.json's extra_ids (how many sentinels follow the pieces); T5Tokenizer's 100 when it names
    none."""
    extra = settings_of(tokenizer_config).get("extra_ids", DEFAULT_EXTRA_IDS)
    if not isinstance(extra, int) or isinstance(extra, bool) or not 0 <= extra <= MAX_EXTRA_IDS:
        raise TokenizerError(f"tokenizer_config.json: extra_ids must be an integer from 0 to {MAX_EXTRA_IDS}, "
                             f"got {str(extra)[:20]}")
    return extra


def spiece_tokenizer_json(proto: bytes, extra_ids: int = DEFAULT_EXTRA_IDS) -> bytes:
    """The tokenizer.json transformers' T5Tokenizer builds from spiece.model's bytes ``proto`` with ``extra_ids``
    sentinels; TokenizerError for a file that is not a unigram sentencepiece model in T5's layout."""
    model = sentencepiece_model_pb2.ModelProto()
    try:
        model.ParseFromString(proto)
    except Exception as exc:  # protobuf's DecodeError (sentencepiece's description of its file is a protobuf)
        raise TokenizerError(f"{SPIECE_FILE}: not a valid sentencepiece model ({type(exc).__name__})") from None
    pieces = [(piece.piece, piece.score) for piece in model.pieces]
    if model.trainer_spec.model_type != UNIGRAM or tuple(p for p, _ in pieces[:3]) != T5_SPECIALS:
        raise TokenizerError(f"{SPIECE_FILE}: not a unigram model with T5's first pieces {', '.join(T5_SPECIALS)} "
                             f"(its first are {', '.join(p[:20] for p, _ in pieces[:3]) or 'none'})")
    sentinels = [f"<extra_id_{i}>" for i in reversed(range(extra_ids))]
    tk = Tokenizer(Unigram([*pieces, *((s, 0.0) for s in sentinels)], unk_id=2, byte_fallback=False))
    charsmap = model.normalizer_spec.precompiled_charsmap
    if charsmap:
        tk.normalizer = normalizers.Precompiled(charsmap)
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)])
    tk.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    control = [piece.piece for piece in model.pieces if piece.type == CONTROL]
    tk.add_special_tokens([AddedToken(s, normalized=False, special=True)
                           for s in dict.fromkeys((*T5_SPECIALS, *control, *sentinels))])
    tk.add_tokens([AddedToken(piece.piece, normalized=False, special=False) for piece in model.pieces
                   if piece.type == USER_DEFINED])
    tk.post_processor = processors.TemplateProcessing(single=["$A", "</s>"], pair=["$A", "</s>", "$B", "</s>"],
                                                      special_tokens=[("</s>", 1)])
    return tk.to_str().encode()
