import pytest
import torch

from model.serving.device import describe


@pytest.mark.parametrize("threads, words", [(1, "CPU (1 thread)"), (2, "CPU (2 threads)")])
def test_the_sidebar_names_the_cpu_and_its_threads_in_plain_english(threads, words):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        assert describe(torch.device("cpu")) == words
    finally:
        torch.set_num_threads(before)
