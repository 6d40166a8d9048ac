"""Building the English->German corpus from Debian packages: `python data/build_corpus.py` is the command.

    build_corpus        the command line
    sources             the sources: tiers, Debian packages, wanted files, licence facts
    debian_packages     download .deb files into a cache and extract the wanted members
    source_readers      one source's extracted files -> its filtered (en, de) pairs
    gettext_catalogues  .mo and .po catalogues
    qt_translations     Qt .qm files, read without Qt
    openttd             OpenTTD's string tables
    game_locales        Hedgewars' and Tux's own formats
    html_prose          help pages and a book in HTML
    ding                the Ding dictionary's sentence and phrase pairs
    cleaning            text rules every source shares: normalisation, word counts, length ratio
    sentence_pairs      a catalogue message and its translation, paired sentence by sentence
    splits              one German per English sentence, a fixed split
    corpus_file         the corpus file's name and bytes
    credits             the licence file written next to each corpus
    extract_digits      the bundled digits, extracted once into data/digits.npz
"""
