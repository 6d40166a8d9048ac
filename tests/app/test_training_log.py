import pandas as pd

from app.models.training_log import cooldown_lines, speed_by_stretch
from training.schedule import training_segments


def test_training_speed_is_told_per_stretch_where_a_run_moved_between_machines():
    # 60 steps on a GPU, then 40 continued on the CPU: one median over all 100 steps would be the GPU's alone
    log = pd.DataFrame({"step": range(1, 101), "tokens_per_s": [400_000 + s for s in range(60)] + [2_000] * 40})
    meta = {"steps": 100, "epochs": 10, "device": "CPU", "processes": 2,
            "continued_from": {"step": 60, "epoch": 6, "device": "CUDA (NVIDIA H100)"}}
    table = speed_by_stretch(log, training_segments(meta))
    assert table.to_dict("records") == [
        {"steps": "1-60", "epochs": "1-6", "where": "CUDA (NVIDIA H100)", "median tokens/s": "400,030"},
        {"steps": "61-100", "epochs": "7-10", "where": "CPU, 2 processes", "median tokens/s": "2,000"}]
    # a log trimmed to its last steps shows only the stretches it covers; one run is one row
    assert speed_by_stretch(log[log["step"] > 60], training_segments(meta))["steps"].tolist() == ["61-100"]
    assert len(speed_by_stretch(log, training_segments({"steps": 100, "epochs": 10}))) == 1


def test_a_stretch_that_began_by_widening_the_model_says_so():
    log = pd.DataFrame({"step": range(1, 51), "tokens_per_s": [2_400] * 30 + [1_700] * 20})
    meta = {"steps": 50, "epochs": 5, "device": "CPU",
            "continued_from": {"step": 30, "epoch": 3, "device": "CPU", "feed_forward_after": [1024, 2048]}}
    assert speed_by_stretch(log, training_segments(meta))["where"].tolist() == [
        "CPU", "CPU, FFN widened from 1,024 to 2,048"]


def test_a_stretch_that_ended_with_a_cooldown_is_named_with_its_epochs_and_no_other_is():
    """The log's curve falls to 0 at the end of a cooled-down stretch: the page says which epochs, not for others."""
    plain = {"step": 100, "epoch": 10, "device": "CPU", "lr_factor": 1.0}
    meta = {"steps": 400, "epochs": 13, "device": "CPU", "lr_factor": 0.5, "cooldown": [11, 13],
            "continued_from": plain}
    lines = cooldown_lines(training_segments(meta))
    assert len(lines) == 1 and "falling linearly to 0 over epochs 11-13, so" in lines[0]
    assert lines[0].endswith("the fall in the curve up to step 400.")  # where it is, not "at the end": runs go on
    assert "over epoch 13, so" in cooldown_lines(training_segments({**meta, "cooldown": [13, 13]}))[0]
    # weights from before the cool-down's end (a kept epoch, or a run stopped early): not called settled at 0
    early = cooldown_lines(training_segments({**meta, "epochs": 12}))
    assert "over epochs 11-13 (these weights are from epoch 12, before it reached 0)" in early[0]
    for odd in (None, [13, 11], [0, 2], ["11", "13"], [11]):  # meta is free-form JSON: nothing claimed
        assert cooldown_lines(training_segments({**meta, "cooldown": odd})) == []
    assert cooldown_lines(training_segments(plain | {"steps": 100, "epochs": 10})) == []
