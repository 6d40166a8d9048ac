"""The Transformer of "Attention Is All You Need", built to hand back every attention weight it uses.

Read it in the paper's order:

    config       the model's shape (ModelConfig) and how to search (DecodeConfig)
    masks        padding and causal masks: bool, True = may attend
    positional   the sinusoidal positional encoding (section 3.5)
    attention    scaled dot-product and multi-head attention (3.2), returning weights as data
    layers       EncoderLayer, DecoderLayer, the position-wise feed-forward network (3.1, 3.3)
    transformer  Embeddings, Encoder, Decoder, Transformer: teacher-forced forward and KV-cached steps
    trace        AttentionTrace, the one container for every attention weight a pass or a step used
    decoding     greedy and beam search as generators of DecodeSteps
    inference    text in, Translation out (pieces, steps, n-best, attention)

and around it: tokenizer (sentencepiece; Marian's source/target pair; a Hugging Face tokenizer.json), checkpoint
(safetensors + config + tokenizer, validated before anything is built), hf_folder, marian and bart (converting a
Hugging Face opus-mt, BART or mBART folder; convert picks one by model_type), quality (a checkpoint's own test
scores), device, serialize (JSON export), __main__ (the CLI) and vision/ (ViT and Swin on images).
Pure PyTorch, sentencepiece, tokenizers and safetensors; nothing here imports app/, explain/ or training/.
"""
