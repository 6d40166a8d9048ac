import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "model", "translate", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_translate_prints_text_and_writes_the_documented_json(tiny_checkpoint, tmp_path):
    out = tmp_path / "t.json"
    proc = run_cli("The house is small.", "--checkpoint", str(tiny_checkpoint), "--beam", "2", "--max-len", "6",
                   "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert proc.stdout.strip() == data["translation"]["text"]
    src_len, tgt_len = len(data["source"]["pieces"]), len(data["translation"]["pieces"])
    assert data["source"]["pieces"][-1] == "</s>"
    enc, dec, cross = (data["attention"][k] for k in ("enc_self", "dec_self", "cross"))
    assert len(enc) == 2 and len(enc[0]) == 2 and len(enc[0][0]) == src_len and len(enc[0][0][0]) == src_len
    assert len(dec[1][1]) == tgt_len and len(dec[1][1][0]) == tgt_len
    assert len(cross[0][0]) == tgt_len and len(cross[0][0][0]) == src_len
    assert abs(sum(cross[0][0][0]) - 1) < 1e-4
    assert data["decode"]["beam_size"] == 2 and 1 <= len(data["n_best"]) <= 2
    assert data["steps"][0]["rows"][0]["prefix"] == ["<s>"] and data["steps"][0]["rows"][0]["top_k"]


@pytest.mark.slow  # over 5 s (measured 11 s): runs in CI, not in the quick loop
def test_errors_are_one_line_without_traceback(tiny_checkpoint, tmp_path):
    for args in (["", "--checkpoint", str(tiny_checkpoint)], ["Hallo", "--checkpoint", str(tmp_path / "missing")],
                 ["Hallo", "--checkpoint", str(tiny_checkpoint), "--beam", "0"]):
        proc = run_cli(*args)
        assert proc.returncode == 2
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def run_main(capsys, *args) -> tuple[int, str, str]:
    """The CLI in this process (no interpreter start per case): exit status, stdout, stderr."""
    from model.__main__ import main

    try:
        status = main(["translate", *args])
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


BAD_ARGUMENTS = [["--beam", "10000"], ["--beam", "1" + "0" * 20], ["--beam", "9" * 400], ["--top-p", "0"],
                 ["--temperature", "-1"], ["--seed", "-1"], ["--beam", "0"], ["--beam", "2.5"],
                 ["--max-len", "0"], ["--max-len", "1024"], ["--length-penalty", "1e308"],
                 ["--length-penalty", "nan"], ["--length-penalty", "inf"], ["--length-penalty", "-0.1"],
                 ["--device", "foo"], ["--device", "CPU"], ["--device", "cuda:-1"], ["--json", ""], ["--json", " "]]


def test_every_number_is_checked_where_it_enters(tiny_checkpoint, capsys):
    """Out of range, not finite or not a number: one line 'error: ...', exit 2, before any model is loaded."""
    for bad in BAD_ARGUMENTS:
        status, out, err = run_main(capsys, "Hallo", "--checkpoint", str(tiny_checkpoint), *bad)
        assert status == 2, bad
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (bad, err)
        assert out == ""


def test_a_hostile_decode_is_reduced_to_the_budget_and_says_so(tiny_checkpoint, capsys, monkeypatch):
    """168 characters the model never ends, at the sliders' maxima: the length limit is cut to 2 x source + 10
    before decoding, and stderr says what was reduced and why."""
    status, out, err = run_main(capsys, "!?.,;:" * 28, "--checkpoint", str(tiny_checkpoint), "--beam", "8",
                                "--max-len", "1023")
    assert status == 0 and out.strip()
    notes = [line for line in err.splitlines() if line.startswith("note: Length limit 1023 → ")]
    assert notes and "2 × the" in notes[0]


def test_a_json_over_its_budget_is_refused_before_decoding(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    """The en-de model's 1,024-piece --json was 262 MB; the tiny model's is smaller, so its limit is lowered here."""
    import model.__main__
    import model.serving.inference
    from model.serving.budget import Budget

    monkeypatch.setattr(model.__main__, "DEFAULT_BUDGET", Budget(max_json_bytes=2**20))
    monkeypatch.setattr(model.serving.inference, "stream", lambda *a, **k: pytest.fail("decoded a refused request"))
    out = tmp_path / "big.json"
    status, _, err = run_main(capsys, " ".join(["house"] * 300), "--checkpoint", str(tiny_checkpoint),
                              "--json", str(out))
    assert status == 2 and err.startswith("error: --json would write about ") and "(limit 1 MB)" in err
    assert not out.exists()


def test_convert_prints_each_stage_as_it_starts_and_a_refusal_after_the_stages_it_reached(tmp_path, capsys):
    """A large model takes minutes to convert: every stage of model.huggingface.folder.STAGES is one line on stdout
    when it
    starts ("1/5: reading config.json"), before the summary; a refusal stops them, its one line on stderr."""
    from model.__main__ import main
    from model.huggingface.folder import STAGES
    from tests.bart_helpers import bart_folder

    stages = [f"{i}/{len(STAGES)}: {stage}" for i, stage in enumerate(STAGES, 1)]
    assert main(["convert", str(bart_folder(tmp_path / "bart")), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[:5] == stages and lines[5] == "read the weights from model.safetensors" and out.err == ""
    assert lines[6].startswith(f"wrote {tmp_path / 'out'}: bart")
    assert main(["convert", str(bart_folder(tmp_path / "big", vocab_size=999)), "--out", str(tmp_path / "no")]) == 2
    out = capsys.readouterr()
    assert out.out.splitlines() == stages[:2]  # the vocabulary is checked once the tokenizer is read
    assert out.err.startswith("error: vocabulary mismatch: tokenizer.json has") and out.err.count("\n") == 1


def test_keep_names_writes_the_names_and_says_what_it_kept(capsys, tmp_path):
    """--keep-names on the shipped model: "Aisha Rahman", which beam 4 garbles (the model card lists it), is in the
    output; stderr and the JSON name what was kept; the JSON's steps carry the banks of the second search. Without a
    beam, or with a checkpoint that ships no copy lexicon, a one-line error."""
    text = "Aisha Rahman will present her results at 11:45 in lecture hall 23."
    out = tmp_path / "t.json"
    status, stdout, err = run_main(capsys, text, "--beam", "4", "--keep-names", "--json", str(out))
    assert status == 0, err
    assert "Aisha Rahman" in stdout and "note: kept Aisha Rahman, 11:45, 23" in err
    data = json.loads(out.read_text())
    assert data["source"]["kept"] == ["Aisha Rahman", "11:45", "23"] and data["decode"]["keep_words"] is True
    steps = data["steps"]  # a step's banks are those of the beams the next step decodes
    assert all(len(a["banks"]) == len(b["rows"]) for a, b in itertools.pairwise(steps))
    status, _, err = run_main(capsys, text, "--keep-names")
    assert status == 2 and err.startswith("error: keeping names and numbers needs beam search")
    status, _, err = run_main(capsys, text, "--checkpoint", str(ROOT / "pretrained" / "reverse"), "--beam", "2",
                              "--keep-names")
    assert status == 2 and "has no copy_lexicon.json" in err and len(err.strip().splitlines()) == 1
