"""The math each concept page shows, computed with the model's own forward pass. Imports model/, never app/.

    heads           head statistics and word-level merging (Translate page)
    positional      sinusoidal offsets as a linear map, position similarity (Positional encoding)
    masks           a padded batch run teacher-forced, so the masks can be seen (Masks)
    mechanics       one attention call opened up; the other score functions (Mechanics of attention)
    model_training  label smoothing's targets and loss floor, parameter counts (Model and training)
    ablation        switching heads off and decoding again (Heads)
    attribution     rollout, attention flow, norms and gradient x input (Heads)
    integrated_gradients  integrated gradients and gradient x input of one step, plain or contrastive (Decoding)
    checkpoints     one sentence read by snapshots from earlier in training (Heads)
    head_map        every head placed by how alike it attends, named by what it does; queries and keys (Heads)
    vision          what a ViT and a Swin read from one digit (Vision)
"""
