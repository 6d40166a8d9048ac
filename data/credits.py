"""The licence file written next to each corpus (data/ATTRIBUTION*.md): sources, packages and versions,
upstreams, licences, counts and copyright lines.

A model trained on the corpus is a derived work of these sources, so the file ships with any weights.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping

from data.ding import WORDS_MIN_ZIPF
from data.sources import EXTRA_SOURCES, MORE_SOURCES, SOURCE_INFO, SOURCES, WESNOTH_CAMPAIGNS

EXTRA_COPYRIGHTS = (
    "Widelands: Copyright 2002-2019 the Widelands Development Team and its translators, GNU GPL v2 or later.",
    "Warzone 2100 translations (po/*.po): Copyright 2007-2008 Warzone 2100 Resurrection Project, 2008 Rosetta",
    "Contributors and Canonical Ltd (game: 1999-2004 Eidos Interactive, 2005-2013 Warzone 2100 Project),",
    "GNU GPL v2 or later.",
    "FreedroidRPG: Copyright 1994, 2002-2004 Johannes Prix and Reinhard Prix, 2009-2010 the Freedroid dev team",
    "and contributors, GNU GPL v2 or later.",
    "OpenTTD: Copyright 2004-2012 Ludvig Strigeous and others, GNU GPL version 2 only. Since this text is",
    "GPL-2.0-only, the plus corpus as a whole (and a model trained on it) is distributed under GPL-2.0: the",
    "other GPL texts allow version 2, and MPL-2.0 lists GPL-2.0 among its secondary licences.",
)


MORE_COPYRIGHTS = (
    "Hedgewars: Copyright 2004-2018 Andrey Korotaev, 2006-2008 Igor Ulyanov, 2004-2015 the Hedgewars Project",
    "and its translators, GNU GPL version 2 only.",
    "Tux Paint and Tux Paint Stamps: Copyright 2002-2022 Bill Kendrick and the Tux Paint translators, GNU GPL",
    "v2 or later.",
    "gbrainy: Copyright 2007-2022 Jordi Mas i Hernàndez, 2007-2018 Siegfried-A. Gevatter and its translators,",
    "GNU GPL v2 or later (its help pages, CC BY-SA 3.0, are not used).",
    "Pingus: Copyright 1999-2007 Ingo Ruhnke and others, GNU GPL v2 or later.",
    "LinCity-NG: Copyright 1995-1997 I J Peters, 1997-2002 Greg Sharp, 2004-2008 Matthias Braun, 2005-2007",
    "Wolfgang Becker and others, GNU GPL v2 or later.",
    "Pioneers: Copyright 2000-2014 Dave Cole, Roland Clobus and the other Pioneers authors, GNU GPL v2 or later.",
    "KStars, Kalzium, Kig, Step, KsirK, KPatience, Kajongg: copyright their KDE authors (among them 2001-2021",
    "Jasem Mutlaq and Jason Harris; 2003-2008 Carsten Niehaus; 2002-2007 Dominique Devriese and Pino Toscano;",
    "2007-2009 Vladimir Kuznetsov; 2001-2010 Gaël de Chalendar; 2001-2009 Stephan Kulow; 2008-2017 Wolfgang",
    "Rohdewald) and the KDE translators, GNU GPL v2 or later (their GFDL handbooks are not used).",
    "GNOME Maps and GNOME Software: Copyright 2011-2015 Red Hat, Inc., 2013-2018 Free Software Foundation,",
    "Inc., 2007-2016 Richard Hughes and others, and the GNOME translators, GNU GPL v2 or later.",
    "Scribus: Copyright 2001-2022 the Scribus Team and its translators, GNU GPL v2 or later.",
    "The Debian Administrator's Handbook: Copyright 2003-2015 Raphaël Hertzog, 2006-2015 Roland Mas, 2013-2015",
    "Freexian SARL and its translators, GNU GPL v2 or later or CC BY-SA 3.0 at your choice: used here under",
    "the GNU GPL v2 or later.",
    "LibreOffice help: Copyright 2000, 2010 Oracle and/or its affiliates, LibreOffice contributors, The",
    "Document Foundation and its German localisation team, MPL 2.0 (like the LibreOffice interface text, its",
    "files carry the notice of the OpenOffice.org work they incorporate, licensed to the ASF under Apache-2.0).",
    "The plus2 corpus as a whole (and a model trained on it) is distributed under GPL-2.0 (GPL-2.0-only):",
    "OpenTTD and Hedgewars are GPL-2.0-only, the other GPL texts allow version 2, the Debian Handbook is used",
    "under its GPL option, and MPL-2.0 (LibreOffice interface and help) lists GPL-2.0 among its secondary",
    "licences. Not used because their licence cannot be combined with GPL-2.0-only text: Cataclysm: Dark Days",
    "Ahead and 0 A.D. (CC BY-SA 3.0), GIMP, SuperTuxKart, Naev and the SuperTux game text (GPL-3.0 or",
    "later), Simutrans (Artistic-1.0), Endgame: Singularity and Unknown Horizons (their text ships as game",
    "data under CC BY-SA 3.0), Inkscape (a GPL of no stated version), and help pages under CC BY-SA or GFDL.",
)


def render_attribution(
    counts: Mapping[str, collections.Counter],
    versions: Mapping[str, str],
    sources: Iterable[str] = SOURCES,
    corpus: str = "data/en-de.tsv.gz",
) -> str:
    """data/ATTRIBUTION.md: each source, its packages and versions, upstream, licence, counts.

    With the extra sources (data/ATTRIBUTION-plus.md) their copyright lines are added, and the
    note that the plus corpus holds the default one unchanged; with the --more sources
    (data/ATTRIBUTION-plus2.md) theirs too, every package of theirs with its version, the licence
    of the whole and the candidates left out for their licence."""
    sources = tuple(sources)
    extra = [name for name in sources if name in EXTRA_SOURCES]
    more = [name for name in sources if name in MORE_SOURCES]
    words_flag = " --ding-words" if "dingwords" in sources else ""
    out = [
        f"# Attribution and licences of {corpus}",
        "",
        "Written by `data/build_corpus.py`; do not edit by hand (rebuild instead).",
        "",
        "Every pair in the corpus is a human translation taken from a Debian package. The text keeps",
        "the licence of the work it comes from. **A model trained on this corpus (its weights, and",
        "any checkpoint or tokenizer derived from the text) is a derived work of these sources**:",
        "ship this file with it and respect each licence (GPL-2.0-or-later: offer the corresponding",
        "source, i.e. this corpus or the means to rebuild it; MPL-2.0: keep the notice, file-level",
        "copyleft for the LibreOffice text).",
        "",
    ]
    if more:
        out += [
            f"Built with `python data/build_corpus.py --more{words_flag}`: every row of data/en-de-plus.tsv.gz (same",
            "German, source and split; it holds every row of data/en-de.tsv.gz), plus the sentences of",
            f"{', '.join(more)} whose English is in neither.",
            "",
        ]
    elif extra:
        out += [
            f"Built with `python data/build_corpus.py --extra{words_flag}`: every row of data/en-de.tsv.gz (same",
            f"German, source and split), plus the sentences of {', '.join(extra)} whose English",
            "is not in it.",
            "",
        ]
    if "dingwords" in sources:
        out += [
            f"With `--ding-words`, a last tier adds the {sum(counts['dingwords'].values()):,} one- and two-word "
            "entries of the Ding dictionary",
            f"whose every word is common (wordfreq Zipf frequency >= {WORDS_MIN_ZIPF['en']} in English, >= "
            f"{WORDS_MIN_ZIPF['de']} in German)",
            "and whose English is not in the tiers before; the rows of the tiers before are unchanged.",
            "",
        ]
    out += [
        "| source | pairs | Debian package(s) | upstream | licence |",
        "|---|---:|---|---|---|",
    ]
    for name in sources:
        info = SOURCE_INFO[name]
        first = info.packages[0]
        pkgs = f"`{first}` {versions.get(first, '')}".strip()
        if name == "wesnoth":
            pkgs += f" and its campaign packages `wesnoth-1.16-{{{','.join(WESNOTH_CAMPAIGNS)}}}`"
        if name in MORE_SOURCES:   # every package by name and version
            pkgs = ", ".join(f"`{p}` {versions.get(p, '')}".strip() for p in info.packages)
        out.append(
            f"| {name} ({info.description}) | {sum(counts[name].values()):,} | {pkgs} "
            f"| {info.upstream} | {info.licence} |"
        )
    out += [
        f"| **all** | **{sum(counts['all'].values()):,}** | | | |",
        "",
        "Ding: Copyright (c) 1995-2023 Frank Richter, GNU GPL v2 or later.",
        "Wesnoth and Freeciv translations: copyright their translators, GNU GPL v2 or later.",
        "LibreOffice translations: copyright The Document Foundation and contributors, MPL 2.0.",
        *(EXTRA_COPYRIGHTS if extra else ()),
        *(MORE_COPYRIGHTS if more else ()),
        "",
        "The full licence texts are in each package under `/usr/share/doc/<package>/copyright`.",
        "",
    ]
    return "\n".join(out)
