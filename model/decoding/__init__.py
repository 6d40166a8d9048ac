"""Decoding: a search over the network's steps, yielded one DecodeStep at a time so the UI can stream it.

    search            greedy, beam and sampled decoding as step generators (the paper's beam search, 6.1)
    forcing           teacher forcing a given output: how each piece stood in the model's distribution
    beam_stopping     when a beam search is over: generate()'s three early_stopping rules
    sampling          temperature, top-k and top-p sampling of the next piece
    copy_words        which names, numbers and codes of an English source German writes as they are
    constrained_beam  beam search that must keep given words (grid beam search)
    batch_decoding    greedy decoding of several sentences as one batch
    static_cache      the decoding step over a static KV cache, compilable once
"""
