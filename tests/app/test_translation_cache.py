"""The translation cache every session shares stays bounded by count and by memory."""
from app.serving.scheduler import Request, TranslationStore
from model.network.config import DecodeConfig
from model.serving.inference import translate


def test_nbytes_counts_the_trace_and_grows_with_the_sentence(shipped):
    ckpt = shipped("reverse")
    short = translate(ckpt.model, ckpt.tokenizer, "a b c", DecodeConfig(max_len=8))
    long = translate(ckpt.model, ckpt.tokenizer, " ".join("abcdefghij" * 5), DecodeConfig(max_len=40))
    trace_bytes = sum(t.numel() * t.element_size() for t in short.trace.tensors())
    assert short.nbytes >= trace_bytes > 0
    assert long.nbytes > 10 * short.nbytes


def test_the_store_evicts_least_recently_used_by_count_and_by_bytes(shipped):
    ckpt = shipped("reverse")
    translations = [translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(max_len=8))
                    for text in ("a b", "c d", "e f")]
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


def test_everyone_on_the_same_translation_gets_one_shared_heatmap(app_test, monkeypatch):
    """A class on the lecturer's link: the translation is decoded once and its heatmap built once, not per session."""
    import app.explorer as explorer

    explorer.shared_heatmap.clear()
    built = []
    real = explorer.heatmap_figure

    def counted(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(explorer, "heatmap_figure", counted)
    sessions = [app_test(text="s h a r e d f i g") for _ in range(3)]
    for at in sessions:
        at.button(key="translate").click().run()
        assert not at.exception and at.get("plotly_chart")
    assert len(built) == 1
    other = (sessions[0].session_state["head"] + 1) % 4  # not the head every session opened on (4 heads)
    sessions[0].segmented_control(key="head").set_value(other).run()  # another head: one more figure, built once
    sessions[1].segmented_control(key="head").set_value(other).run()
    assert len(built) == 2
