"""What a visitor's text meets before and after a translation: escaping, and the checks the pages show.

    escape           text a visitor controls, made inert wherever Streamlit renders Markdown
    paragraphs       a pasted paragraph, cut into sentences
    language_check   does a sentence look like the language the model reads?
    carried_numbers  did the translation keep the sentence's numbers?
"""
