"""Text <-> pieces and ids, for every kind of tokenizer a checkpoint can carry (ModelConfig.tokenizer says which).

    pieces       what they all share: special ids and pieces, word grouping for labels, text cleaning, file loading
    joint        the project's own joint English+German sentencepiece model (one shared embedding, as the paper)
    marian       Marian opus-mt: a source and a target sentencepiece model over one vocabulary
    m2m100       M2M100's sentencepiece model, vocab.json and language codes (a folder without tokenizer.json)
    bounded      what a tokenizer.json may hold: the regexes and models of the supported families, linear in the text
    huggingface  a Hugging Face tokenizer.json, read by the tokenizers package
    kinds        TextTokenizer: any of the four
"""
