"""Training under torchrun: two gloo processes on this CPU step exactly as one process on both of their batches,
and what they save resumes in one process."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from model.checkpoints.files import load_checkpoint
from training.data import collate, token_batches
from training.distributed import Ranks
from training.schedule import noam_lr
from training.train import build_or_resume, parse_args, train_step
from training.train import main as train_main

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--task", "reverse", "--d-model", "32", "--n-heads", "2", "--layers", "1", "--d-ff", "64", "--warmup", "10",
        "--valid-bleu", "5", "--save-every", "10", "--threads", "1", "--dropout", "0"]


def torchrun(out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               "-m", "training.train", *TINY, "--out", str(out), *extra]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
def test_two_processes_step_as_one_process_on_both_shards_and_their_checkpoint_resumes_in_one(tmp_path):
    done = torchrun(tmp_path / "ddp", "--max-steps", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    after_ddp = load_checkpoint(tmp_path / "ddp" / "last").model.state_dict()

    # One process, same seed (so the same tokenizer, initial weights and batch order), both ranks' batches at once.
    args = parse_args([*TINY, "--out", str(tmp_path / "single")])
    torch.manual_seed(args.seed)  # as training.train.main seeds before building the model
    run = build_or_resume(args, Ranks(0, 1, torch.device("cpu")))
    batches = token_batches(run.train_pairs, args.max_tokens, seed=args.seed * 1000)
    both = collate([run.train_pairs[i] for i in batches[0] + batches[1]], run.model.config.pad_id,
                   run.model.config.bos_id)
    before = {k: v.clone() for k, v in run.model.state_dict().items()}
    train_step(run, both, noam_lr(1, args.d_model, args.warmup, args.lr_factor))

    # The gradient: after one step Adam's first moment is (1 - beta1) g, saved by rank 0 with the checkpoint.
    ddp_moments = load_file(str(tmp_path / "ddp" / "last" / "optimizer.safetensors"))
    names = [name for name, _ in run.model.named_parameters()]
    for pid, (name, param) in enumerate(run.model.named_parameters()):
        ours = run.optimizer.state[param]["exp_avg"]
        torch.testing.assert_close(ddp_moments[f"{pid}.exp_avg"], ours, atol=1e-7, rtol=1e-5, msg=name)
        # The weights: equal wherever the gradient is above rounding noise. Where it is ~0 in exact arithmetic
        # (the key bias: it adds one constant to a whole row of scores, which softmax ignores), Adam's first
        # step g / (|g| + eps) turns each process's rounding noise into a different small move.
        real = ours.abs() > 1e-6
        torch.testing.assert_close(after_ddp[name][real], param.detach()[real], atol=1e-6, rtol=0, msg=name)
    moved = sum(not torch.equal(run.model.state_dict()[n], before[n]) for n in names)
    assert moved > 0.9 * len(names)  # the step really changed the weights

    state = json.loads((tmp_path / "ddp" / "last" / "state.json").read_text())
    assert state["step"] == 1 and state["batch"] == 2  # one step consumed one batch per rank
    assert load_checkpoint(tmp_path / "ddp" / "last").meta["processes"] == 2  # kept by the loader: the card says so
    assert train_main([*TINY, "--out", str(tmp_path / "ddp"), "--max-steps", "3"]) == 0
    state = json.loads((tmp_path / "ddp" / "last" / "state.json").read_text())
    assert state["step"] == 3 and state["batch"] == 4  # resumed in one process at the 2-process checkpoint
