import json
import subprocess
import sys
from pathlib import Path

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


def test_errors_are_one_line_without_traceback(tiny_checkpoint, tmp_path):
    for args in (["", "--checkpoint", str(tiny_checkpoint)], ["Hallo", "--checkpoint", str(tmp_path / "missing")],
                 ["Hallo", "--checkpoint", str(tiny_checkpoint), "--beam", "0"]):
        proc = run_cli(*args)
        assert proc.returncode == 2
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
