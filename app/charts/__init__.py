"""Pure figure builders: numpy/pandas in, plotly.graph_objects.Figure out (one module per concept).

    style       one look for every figure: a small template, projector-readable fonts
    figure_size  what a figure holds in memory, to bound a cache of figures by bytes
    axes        token-labelled axes every figure with pieces on its axes shares
    attention   heatmap, head view, layers x heads model view, head statistics
    decoding    next-token probabilities, one attention row, the beam tree
    contrastive  why this piece and not that one: attributions per piece; a scored translation as a table
    positional  the sinusoid matrix, chosen dimensions, PE.PE^T
    masks       the padded batch, the masks as grids, scores before and after masking
    mechanics   every stage of one attention head with real numbers; the score functions
    one_query   one query of one head through q·k, ÷√d_k and the softmax to the winning key
    heads       head importance and token-by-token matrices for the Heads page
    head_map    every head placed by how alike it attends; one head's queries and keys in a plane
    training    parameter counts, the architecture diagram, schedule and label smoothing
    vision      a digit cut into patches or windows, attention laid over the image
"""
