"""The folder of compiled packages (model.serving.step_package.prune) stays under its cap: the packages least recently
loaded go first, never one this process has just loaded, so that packages of older weights, code or torch versions do
not pile up on a server's disk."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.serving import step_package


@given(sizes=st.lists(st.integers(1, 50), min_size=1, max_size=12), cap=st.integers(0, 200),
       kept=st.sets(st.integers(0, 11), max_size=3))
def test_the_least_recently_used_go_first_and_the_loaded_stay(tmp_path_factory, sizes: list[int], cap: int,
                                                              kept: set[int]) -> None:
    folder = tmp_path_factory.mktemp("packages")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(step_package.CACHE_ENV, str(folder))
        check_prune(folder, sizes, cap, kept)


def check_prune(folder: Path, sizes: list[int], cap: int, kept: set[int]) -> None:
    paths = []
    for age, size in enumerate(sizes):  # package 0 loaded most recently
        path = folder / f"step-{age}.pt2"
        path.write_bytes(b"x" * size)
        os.utime(path, (1e9 - age, 1e9 - age))
        paths.append(path)
    (folder / "notes.txt").write_text("not a package")
    loaded = [paths[i] for i in kept if i < len(paths)]
    deleted = step_package.prune(loaded, cap)
    left = [path for path in paths if path.exists()]
    assert set(deleted) == set(paths) - set(left) and (folder / "notes.txt").exists()
    assert set(loaded) <= set(left)  # never one just loaded
    for age, path in enumerate(paths):  # newest first, each stays exactly when it fits beside the newer ones kept
        newer = sum(sizes[i] for i in range(age) if paths[i] in left)
        if path not in loaded:
            assert (path in left) == (newer + sizes[age] <= cap)


def test_a_package_for_a_gpu_is_keyed_by_that_gpu(monkeypatch) -> None:
    """The same weights on the CPU and on a GPU, or on two kinds of GPU, never share a package: compiled code serves
    the device it was compiled for only."""
    names = iter(["NVIDIA H200", "NVIDIA A100"])
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: next(names))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    cpu, h200, a100 = (step_package._machine(torch.device(kind)) for kind in ("cpu", "cuda", "cuda"))
    assert cpu == step_package._cpu()
    assert len({cpu, h200, a100}) == 3 and "H200" in h200 and "A100" in a100
