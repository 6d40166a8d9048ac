"""The pages, one module each; Streamlit runs them as scripts from streamlit_app.py.

    translate        the home page: type a sentence, watch it decoded, explore its attention
    scoring          score my own translation: the model reads a given translation (Translate page)
    decode_settings  the Translate page's folded decoding settings: beam, length, sampling, slow motion
    decoding         step by step: what the decoder saw and predicted, and the beam tree
    contrastive      why this piece and not that one at a decoding step (Decoding page, a lecture slide)
    positional       the sinusoidal positional encoding
    masks            padding and causal masks on a real batch
    mechanics        one head opened up: QK^T, scaling, masking, softmax, weighted sum
    heads            switching heads off, attribution, comparing sentences, watching attention learn
    model_training   the model's configuration, label smoothing and the learning-rate schedule
    lecture          the guided tour, one slide at a time
    slide_figures    the figure of each lecture slide, built from the concept pages' charts
    lecture_file     the lecture as one self-contained HTML file: every slide, no server, no network
    vision           the same attention on image patches: ViT and Swin
"""
