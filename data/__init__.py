"""Building the English->German corpus from Debian packages: `python data/build_corpus.py` is the command."""
