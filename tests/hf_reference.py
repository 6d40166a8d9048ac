"""What every Hugging Face equivalence test checks the same way: a teacher-forced pass of a padded batch gives the
logits and every attention weight of every layer that transformers gives (tests/model/test_marian.py,
test_bart.py, test_t5.py)."""
from __future__ import annotations

from collections.abc import Callable

import torch

from model.network.attention import Capture


def assert_same_forward(hf, ckpt, texts: list[str], tgt: torch.Tensor, pad: int, logits_atol: float = 1e-5,
                        enc_rows: Callable[[torch.Tensor], torch.Tensor] | None = None) -> None:
    """The sources of ``texts`` padded into one batch and the decoder inputs ``tgt`` [B, T] through Hugging Face's
    eager model and ours: logits to ``logits_atol``, every attention weight [B, H, Q, K] of every layer to 1e-5
    (``enc_rows(src)`` [B, 1, S, 1], where given, the encoder query rows compared)."""
    rows = [ckpt.tokenizer.encode_source(text) for text in texts]
    src = torch.tensor([r + [pad] * (max(map(len, rows)) - len(r)) for r in rows])  # [B, S]
    with torch.no_grad():
        theirs = hf(input_ids=src, attention_mask=(src != pad).long(), decoder_input_ids=tgt, output_attentions=True)
        logits, trace = ckpt.model(src, tgt, capture=Capture.WEIGHTS)
    assert torch.allclose(logits, theirs.logits, atol=logits_atol)
    for kind, reference in (("enc_self", theirs.encoder_attentions), ("dec_self", theirs.decoder_attentions),
                            ("cross", theirs.cross_attentions)):
        assert len(getattr(trace, kind)) == len(reference) == ckpt.config.n_encoder_layers
        keep = enc_rows(src) if enc_rows is not None and kind == "enc_self" else torch.ones(1, 1, 1, 1, dtype=bool)
        for ours, expected in zip(getattr(trace, kind), reference, strict=True):  # [B, H, Q, K] per layer
            assert ours.shape == expected.shape and torch.allclose(ours * keep, expected * keep, atol=1e-5)
