"""The lecture: a guided tour of the paper on the current sentence (the page is app/views/lecture.py).

    slides  one Slide per step, in lecture order: title, figure maker, speaker notes
"""
