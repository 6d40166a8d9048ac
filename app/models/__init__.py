"""The models a visitor can pick, and what the app says about each.

    registry      the shipped and converted models under pretrained/, loaded once per server process
    uploads       a checkpoint a user uploads: which file is which and the checks it passes
    converter     the sidebar's converter: a Hugging Face folder the server has, turned into a model of the picker
    examples      example sentences in the language a model reads, and language names
    quality       the Translate page's note on a weak model, from its own test scores
    training_log  what a checkpoint's training log says beyond its curves
"""
