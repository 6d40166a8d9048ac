"""The sources of the corpus: their tiers, Debian packages, wanted files and licence facts.

Every other module takes its source names from here, so the tiers (default, --extra, --more,
--ding-words) and their order are defined once: dedup ranks sources by this order, and the
attribution file lists them in it.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCES = ("ding", "wesnoth", "libreoffice", "freeciv")
EXTRA_SOURCES = ("widelands", "warzone2100", "freedroidrpg", "openttd")   # with --extra only
# With --more only. Prose, dialogue and children's text first: within the tier an English sentence
# found in two sources is, at equal votes, taken from the earlier one (see `deduplicate`).
MORE_SOURCES = (
    "hedgewars", "tuxpaint", "gbrainy", "pingus", "lincity", "pioneers",
    "kde", "gnome", "scribus", "handbook", "lohelp",
)
WORDS_SOURCES = ("dingwords",)  # with --ding-words only, on top of any of the above: see parse_ding_words
PLUS_SOURCES = SOURCES + EXTRA_SOURCES
ALL_SOURCES = PLUS_SOURCES + MORE_SOURCES + WORDS_SOURCES
# Dedup tiers: an English sentence found in a tier is decided by that tier alone (see `deduplicate`).
SOURCE_TIERS = (SOURCES, EXTRA_SOURCES, MORE_SOURCES, WORDS_SOURCES)


WESNOTH_CAMPAIGNS = (
    "did", "dm", "dw", "ei", "httt", "l", "low", "nr",
    "sof", "sota", "sotbe", "thot", "trow", "tsg", "ttb", "utbs",
)


@dataclass(frozen=True)
class Source:
    """Where one source's text lives: Debian packages, members wanted, licence facts."""

    name: str
    packages: tuple[str, ...]
    members: tuple[str, ...]  # fnmatch patterns on paths inside the .deb (no leading ./)
    upstream: str
    licence: str
    description: str


SOURCE_INFO: dict[str, Source] = {
    "ding": Source(
        "ding",
        ("trans-de-en",),
        ("usr/share/trans/de-en",),
        "Ding German-English dictionary, Frank Richter, TU Chemnitz (https://dict.tu-chemnitz.de/)",
        "GPL-2.0-or-later",
        "dictionary example sentences, idioms and phrases",
    ),
    "dingwords": Source(
        "dingwords",
        ("trans-de-en",),
        ("usr/share/trans/de-en",),
        "Ding German-English dictionary, Frank Richter, TU Chemnitz (https://dict.tu-chemnitz.de/)",
        "GPL-2.0-or-later",
        "the dictionary's one- and two-word entries of common words",
    ),
    "wesnoth": Source(
        "wesnoth",
        ("wesnoth-1.16-data", *(f"wesnoth-1.16-{c}" for c in WESNOTH_CAMPAIGNS)),
        ("usr/share/games/wesnoth/1.16/locale/de/LC_MESSAGES/*.mo",),
        "The Battle for Wesnoth 1.16 and its German translation team (https://www.wesnoth.org/)",
        "GPL-2.0-or-later",
        "campaign dialogue, story text, unit descriptions and help",
    ),
    "libreoffice": Source(
        "libreoffice",
        ("libreoffice-l10n-de",),
        ("usr/lib/libreoffice/program/resource/de/LC_MESSAGES/*.mo",),
        "LibreOffice, The Document Foundation, German localisation (https://www.libreoffice.org/)",
        "MPL-2.0",
        "user interface messages and extended tool tips",
    ),
    "freeciv": Source(
        "freeciv",
        ("freeciv-data",),
        ("usr/share/locale/de/LC_MESSAGES/freeciv*.mo",),
        "Freeciv 3.0 and its German translators (https://www.freeciv.org/)",
        "GPL-2.0-or-later",
        "game help text, messages and nation legends",
    ),
    # ---- extra sources (--extra): all ranked after the four above
    "widelands": Source(
        "widelands",
        ("widelands-data",),
        ("usr/share/games/widelands/data/locale/de/LC_MESSAGES/*.mo",),
        "Widelands 1.1, the Widelands Development Team and its German translators "
        "(https://www.widelands.org/)",
        "GPL-2.0-or-later",
        "campaign and tutorial story text, building and worker help",
    ),
    "warzone2100": Source(
        "warzone2100",
        ("warzone2100-data",),
        ("usr/share/locale/de/LC_MESSAGES/warzone2100*.mo",),
        "Warzone 2100 4.3, the Warzone 2100 Project and its German translators (https://wz2100.net/)",
        "GPL-2.0-or-later",
        "mission briefings, research and interface messages",
    ),
    "freedroidrpg": Source(
        "freedroidrpg",
        ("freedroidrpg-data",),
        ("usr/share/locale/de/LC_MESSAGES/freedroidrpg*.mo",),
        "FreedroidRPG 1.0, the Freedroid developers and their German translators "
        "(https://www.freedroid.org/)",
        "GPL-2.0-or-later",
        "NPC dialogues, item and quest descriptions, interface text",
    ),
    "openttd": Source(
        "openttd",
        ("openttd-data",),
        ("usr/share/games/openttd/lang/english.lng", "usr/share/games/openttd/lang/german.lng"),
        "OpenTTD 13.0, the OpenTTD team and its German translators (https://www.openttd.org/)",
        "GPL-2.0-only",
        "settings help, tool tips and news messages",
    ),
    # ---- more sources (--more): a third tier, all ranked after the eight above
    "hedgewars": Source(
        "hedgewars",
        ("hedgewars-data",),
        tuple(
            f"usr/share/games/hedgewars/Data/Locale/{name}"
            for name in (
                "de.lua", "en.txt", "de.txt", "missions_en.txt", "missions_de.txt",
                "campaigns_en.txt", "campaigns_de.txt", "hedgewars_de.qm",
            )
        ),
        "Hedgewars 1.0, the Hedgewars Project and its German translators (https://www.hedgewars.org/)",
        "GPL-2.0-only",
        "mission dialogue, mission and campaign briefings, game messages",
    ),
    "tuxpaint": Source(
        "tuxpaint",
        ("tuxpaint-data", "tuxpaint-stamps-default"),
        ("usr/share/locale/de/LC_MESSAGES/tuxpaint.mo", "usr/share/tuxpaint/stamps/*.txt"),
        "Tux Paint 0.9.28 and Tux Paint Stamps 2022.06.04, Bill Kendrick (New Breed Software) and "
        "the Tux Paint translators (https://tuxpaint.org/)",
        "GPL-2.0-or-later",
        "drawing tool tips and stamp descriptions written for children",
    ),
    "gbrainy": Source(
        "gbrainy",
        ("gbrainy",),
        ("usr/share/locale/de/LC_MESSAGES/gbrainy.mo",),
        "gbrainy 2.4, Jordi Mas i Hernàndez and its German translators (https://wiki.gnome.org/Apps/gbrainy)",
        "GPL-2.0-or-later",
        "logic puzzles: questions, answers and tips; not the CC-BY-SA help pages",
    ),
    "pingus": Source(
        "pingus",
        ("pingus-data",),
        ("usr/share/games/pingus/data/po/de.po",),
        "Pingus 0.7, Ingo Ruhnke and others, and its German translators (https://pingus.seul.org/)",
        "GPL-2.0-or-later",
        "level descriptions and story",
    ),
    "lincity": Source(
        "lincity",
        ("lincity-ng-data",),
        ("usr/share/games/lincity-ng/locale/de.po", "usr/share/games/lincity-ng/locale/gui/de.po"),
        "LinCity-NG 2.9, I J Peters, Greg Sharp, Matthias Braun, Wolfgang Becker and others "
        "(https://github.com/lincity-ng/lincity-ng)",
        "GPL-2.0-or-later",
        "city building messages and advice; not the help pages, a free adaptation",
    ),
    "pioneers": Source(
        "pioneers",
        ("pioneers-console-data",),
        ("usr/share/locale/de/LC_MESSAGES/pioneers.mo",),
        "Pioneers 15.6, Dave Cole, Roland Clobus and the Pioneers developers and translators "
        "(https://pio.sourceforge.net/)",
        "GPL-2.0-or-later",
        "board game messages and computer player chat",
    ),
    "kde": Source(
        "kde",
        ("kstars-data", "kalzium-data", "kig", "step", "ksirk", "kpat", "kajongg"),
        ("usr/share/locale/de/LC_MESSAGES/*.mo",),
        "KStars 3.6 and KDE Gear 22.12 (Kalzium, Kig, Step, KsirK, KPatience, Kajongg), their authors "
        "and the KDE German translation team (https://kde.org/)",
        "GPL-2.0-or-later",
        "astronomy, chemistry, geometry and physics explanations, game messages",
    ),
    "gnome": Source(
        "gnome",
        ("gnome-maps", "gnome-software-common"),
        ("usr/share/locale/de/LC_MESSAGES/gnome-maps.mo", "usr/share/locale/de/LC_MESSAGES/gnome-software.mo"),
        "GNOME Maps 43 and GNOME Software 43, their authors and the GNOME German translation team "
        "(https://www.gnome.org/)",
        "GPL-2.0-or-later",
        "help and error messages",
    ),
    "scribus": Source(
        "scribus",
        ("scribus-data",),
        ("usr/share/scribus/translations/scribus.de.qm",),
        "Scribus 1.5.8, the Scribus Team and its German translators (https://www.scribus.net/)",
        "GPL-2.0-or-later",
        "desktop publishing tool tips and messages",
    ),
    "handbook": Source(
        "handbook",
        ("debian-handbook",),
        ("usr/share/doc/debian-handbook/html/en-US/*.html", "usr/share/doc/debian-handbook/html/de-DE/*.html"),
        "The Debian Administrator's Handbook (Debian 11), Raphaël Hertzog, Roland Mas and its German "
        "translators (https://debian-handbook.info/)",
        "GPL-2.0-or-later (dual GPL-2.0+ / CC-BY-SA-3.0, used under the GPL)",
        "a book: prose about running a Debian system, paired paragraph by paragraph",
    ),
    "lohelp": Source(
        "lohelp",
        ("libreoffice-help-en-us", "libreoffice-help-de"),
        ("usr/share/libreoffice/help/en-US/text/*.html", "usr/share/libreoffice/help/de/text/*.html"),
        "LibreOffice 7.4 help, The Document Foundation, German localisation (https://help.libreoffice.org/)",
        "MPL-2.0",
        "application help pages, paired by paragraph id; not the Basic programming reference",
    ),
}
