"""The training pipeline: the corpus and its batches, the paper's schedule and loss, training (one process or
torchrun), evaluation with diagnostics, checkpoint averaging, export and the model card.

Imports ``model`` (and ``explain`` for attention statistics); nothing in ``model`` or ``app`` imports it,
except the app reading the pure schedule formula (``training.schedule``). Never runs in CI beyond tiny tests.
"""
