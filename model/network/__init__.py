"""The paper's network (sections 3.1-3.5), each module returning its attention as data.

    config             ModelConfig (the model's shape) and DecodeConfig (how to search), frozen and validated
    masks              padding and causal masks: bool, True = may attend
    positional         the sinusoidal positional encoding (3.5), a pure function
    attention          scaled dot-product and multi-head attention (3.2); Capture says how much a pass keeps
    relative_position  T5's relative position buckets, a bias on the scores instead of a position code
    layers             EncoderLayer, DecoderLayer and the position-wise feed-forward network (3.1, 3.3)
    transformer        Embeddings, Encoder, Decoder, Transformer: teacher-forced forward and KV-cached steps
    trace              AttentionTrace, the one container for every attention weight a pass or a step used
    weight_layout      the weights stored column-major for decoding on the CPU (the same values, faster steps)
"""
