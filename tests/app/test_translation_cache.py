"""The translation cache every session shares stays bounded by count and by memory."""
from app.translation import Request, TranslationStore
from model.config import DecodeConfig
from model.inference import translate


def test_nbytes_counts_the_trace_and_grows_with_the_sentence(shipped):
    ckpt = shipped("reverse")
    short = translate(ckpt.model, ckpt.tokenizer, "a b c", DecodeConfig(max_len=8))
    long = translate(ckpt.model, ckpt.tokenizer, " ".join("abcdefghij" * 5), DecodeConfig(max_len=40))
    trace_bytes = sum(t.numel() * t.element_size() for t in short.trace.tensors())
    assert short.nbytes >= trace_bytes > 0
    assert long.nbytes > 10 * short.nbytes


def test_the_store_evicts_least_recently_used_by_count_and_by_bytes(shipped):
    ckpt = shipped("reverse")
    translations = [translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(max_len=8)) for text in ("a b", "c d", "e f")]
    requests = [Request(model_name="reverse", text=t.source.text) for t in translations]
    by_count = TranslationStore(capacity=2)
    for request, translation in zip(requests, translations, strict=True):
        by_count.put(request, translation)
    assert by_count.get(requests[0]) is None and by_count.get(requests[2]) is translations[2]

    budget = translations[0].nbytes + translations[1].nbytes  # room for two
    by_bytes = TranslationStore(capacity=100, max_bytes=budget)
    by_bytes.put(requests[0], translations[0])
    by_bytes.put(requests[1], translations[1])
    by_bytes.get(requests[0])  # now the most recently used
    by_bytes.put(requests[2], translations[2])
    assert by_bytes.get(requests[1]) is None and by_bytes.get(requests[0]) is translations[0]
    assert by_bytes.bytes <= budget + translations[2].nbytes and by_bytes.bytes == sum(
        t.nbytes for t in (translations[0], translations[2]))
