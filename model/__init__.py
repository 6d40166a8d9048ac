"""The Transformer of "Attention Is All You Need", built to hand back every attention weight it uses.

Pure PyTorch, sentencepiece, tokenizers and safetensors; nothing here imports app/, explain/ or training/. Read the
subpackages in this order (each one's docstring lists its modules in reading order):

    network       the paper's network: config, masks, positional encoding, attention, layers, the Transformer
    decoding      greedy, beam and sampled search as step generators, and what bends them (kept words, batches)
    tokenization  text <-> pieces: the project's sentencepiece model, Marian's pair, M2M100's, a tokenizer.json
    checkpoints   a checkpoint's files: safetensors weights checked before reading, config, meta, test scores
    serving       text in, Translation out: inference, the request budget, a room's batch queue, JSON export
    huggingface   converting Hugging Face encoder-decoder folders (Marian, BART/mBART/M2M100/NLLB, T5)
    vision        ViT and Swin on images, built from the same attention
    __main__      the command line: python -m model translate | convert | convert-marian | ...
"""
