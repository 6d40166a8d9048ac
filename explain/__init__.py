"""The math each concept page shows, one module per page, computed with the model's own forward pass.

heads (Translate page: head statistics, word-level merging), positional (Positional encoding),
masks (Masks: a padded batch), mechanics (Mechanics of attention: Q, K, V and the score functions),
model_training (Model and training: label smoothing, parameter counts). Imports ``model`` only, never ``app``.
"""
