"""Serving a translation: text in, a Translation out, within a budget, shared by a room.

    device         CUDA when present, the CPU otherwise, unless the caller says
    budget         what a decode will cost, known before it starts, and the settings that fit a budget
    compiled_step  the compiled decoding step, built in the background so that no visitor waits for a compile
    step_package   that step compiled ahead of time (AOTInductor), kept on disk per machine and model
    inference      text in, Translation out: pieces, steps, n-best and every attention weight
    batch_queue    concurrent greedy requests decoded as one batch (a lecture hall's sessions)
    doubt          how sure the model was of its own output, per piece, and the note when it was not
    serialize      a Translation as JSON-ready data (the CLI's --json and the app's download)
"""
