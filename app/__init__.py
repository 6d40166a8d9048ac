"""The Streamlit app: pages that ask model/ and explain/ and draw with Plotly. No torch here.

The root holds the plumbing every page shares; the subpackages group the rest by concern:

    page       the logger, how a chart is put on screen, the selected model, the current translation
    state      session-state keys, their defaults and the URL query parameters that mirror them
    sidebar    the sidebar every page shares
    presenter  presenter mode: the app on a lecture hall's projector
    browser    the little JavaScript the app runs in the page (keys, the copy box, one history entry per view)
    canvas     a drawing canvas (mouse, pen or finger) whose strokes come back to the server
    explorer   the attention explorer: kind, layer and head of a finished translation
    opening    which head the explorer opens on: the most focused, until the visitor chooses one
    downloads  what a user takes away: the matrix as CSV or JSON, a figure as HTML, the translation as JSON
    export     command line: python -m app.export lecture writes the lecture as one offline HTML file
    serving    the server's side: the translation scheduler and cache, stopping abandoned work, memory
    models     the model registry, uploads, the converter, a model's examples, quality note and training log
    checks     what a visitor's text is checked and escaped with
    lecture    the lecture's slides, as data
    charts     pure figure builders, one module per concept
    heads      the Heads and attribution page's sections
    views      the pages, one module each
"""
