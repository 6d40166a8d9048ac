"""The lecture: a guided tour of the paper on the current sentence (the page is app/views/lecture.py).

    slides    one Slide per step, in lecture order: title, figure maker, speaker notes
    measures  what a slide reads off the numbers: a window's rows, the least-sure step, dropped words
    prepared  the lecturer's prepared sentences (up to five, one per line) and which one comes next
"""
