"""A checkpoint's files: one folder of safetensors weights, config.json and the tokenizer, trusted in nothing.

    header   the safetensors header checked before a byte of tensor data is read; CheckpointError
    shapes   the tensor names and shapes a config implies
    shards   weights split into several safetensors files, with their index
    meta     what a checkpoint's meta says (its training recipe, decode rules), cleaned and checked
    files    save and load a checkpoint, validated before anything is built; its snapshots and copy lexicon
    quality  a checkpoint's own test scores and the bars it is judged by
"""
