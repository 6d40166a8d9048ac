"""Converting a Hugging Face encoder-decoder folder into a checkpoint of this project, exactly.

    folder     reading any family's folder: config.json, the weights (sharded or not), our tensor names
    convert    one entry point: config.json's model_type picks the converter
    marian     Marian (Helsinki-NLP opus-mt-*)
    bart       BART, mBART, M2M100 and NLLB
    t5         T5, T5 v1.1 and Flan-T5
    spiece     T5's spiece.model turned into a tokenizer.json (folders without one)
    bpe_files  BART's vocab.json + merges.txt turned into a tokenizer.json (folders without one)
"""
