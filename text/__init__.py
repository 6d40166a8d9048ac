"""Text rules the app and the corpus build share: the standard library only, so that `data/` stays free of torch.

    sentences  where a sentence ends
"""
