"""Attention on images: the same MultiHeadAttention, applied to patches of handwritten digits.

    config      ViTConfig and SwinConfig (frozen, validated, stored beside each checkpoint)
    digits      the bundled 8x8 digits (data/digits.npz) and their fixed split
    drawing     a digit drawn as strokes, made into an 8x8 image the way the bundled digits were
    patches     cutting an image into a sequence of patch vectors (the "words" of a vision Transformer)
    vit         Vision Transformer (Dosovitskiy et al., 2020): [CLS] + patches + learned positions, pre-norm layers
    windows     Swin's window partition, cyclic shift, shifted-window mask and relative position index
    swin        Swin Transformer (Liu et al., 2021): (shifted) window attention, relative bias, patch merging
    checkpoint  safetensors + config.json, validated like model.checkpoints.files
"""
