"""Rebuild the English->German parallel corpus (data/en-de.tsv.gz) from Debian packages.

    python data/build_corpus.py [--out data/en-de.tsv.gz] [--cache .cache/debs]
    python data/build_corpus.py --extra    # + four more sources -> data/en-de-plus.tsv.gz
    python data/build_corpus.py --more     # + a third tier of eleven -> data/en-de-plus2.tsv.gz

One command, deterministic: the same .deb files give a byte-identical output. Real human
translations are taken from four Debian packages (see data/ATTRIBUTION.md, written by this
script next to the output):

    ding         trans-de-en           the Ding dictionary: everyday sentences, idioms, phrases
    wesnoth      wesnoth-1.16-*        game dialogue and unit descriptions (.mo catalogues)
    libreoffice  libreoffice-l10n-de   interface text and tool tips (.mo catalogues)
    freeciv      freeciv-data          game help text and nation legends (.mo catalogues)

`--extra` adds four more sources (an opt-in experiment: does more real human translation help?)
and writes data/en-de-plus.tsv.gz with data/ATTRIBUTION-plus.md; without it the output is
unchanged, byte for byte:

    widelands    widelands-data        campaign story, tutorials, building help (.mo catalogues)
    warzone2100  warzone2100-data      mission briefings and interface messages (.mo catalogue)
    freedroidrpg freedroidrpg-data     NPC dialogues, item descriptions (.mo catalogues)
    openttd      openttd-data          settings help and tool tips (compiled .lng string tables)

The plus corpus holds every row of the default corpus unchanged (same German, source and split;
see `splits.deduplicate`), plus the new sources' sentences whose English is not in it yet.

`--more` adds a third tier on top of the plus corpus and writes data/en-de-plus2.tsv.gz with
data/ATTRIBUTION-plus2.md; the default and plus outputs stay byte for byte as they were:

    hedgewars    hedgewars-data        mission dialogue, campaign and mission briefings (Lua, .txt, .qm)
    tuxpaint     tuxpaint-data, tuxpaint-stamps-default   tool tips, stamp descriptions for children
    gbrainy      gbrainy               puzzle questions, answers and tips (.mo)
    pingus       pingus-data           level descriptions and story (.po)
    lincity      lincity-ng-data       city building messages and advice (.po)
    pioneers     pioneers-console-data Settlers of Catan messages and chat (.mo)
    kde          kstars-data, kalzium-data, kig, step, ksirk, kpat, kajongg   KDE education apps, games
    gnome        gnome-maps, gnome-software-common   GNOME help and error messages (.mo)
    scribus      scribus-data          desktop publishing tool tips (Qt .qm)
    handbook     debian-handbook       The Debian Administrator's Handbook (HTML, paired by paragraph)
    lohelp       libreoffice-help-de, -en-us   LibreOffice help pages (HTML, paired by paragraph id)

Same rule one tier up: every row of the plus corpus is kept unchanged, and only sentences whose
English is in neither earlier tier are added (their split comes from the same hash).

The packages are fetched with `apt-get download` into a cache folder (no root, no install) and
read with `dpkg-deb --fsys-tarfile`; only the wanted members are written below the cache. The
system is not changed. A cached .deb is reused, so a rebuild is offline once the cache is warm.

Choices worth knowing (each has a reason in the docstring of the function that makes it):
- One German per English sentence (see `splits.deduplicate`): identical inputs with different
  targets are label noise for a model and make a test reference arbitrary.
- A fixed split by a stable hash of the English sentence (see `splits.assign_split`): a sentence
  lands in the same split on every rebuild, whatever else changes in the corpus.
- Only the first plural form, no format codes, markup or variables (see
  `gettext_catalogues.clean_mo_pair`): the model should learn to translate what a person types,
  not printf templates.

This script is the command line; the work is done by the modules of the `data` package, one a
concern: sources.py (the sources, their packages and licences), debian_packages.py (download and
extract), source_readers.py (a source's files -> pairs), the parsers ding.py, gettext_catalogues.py,
qt_translations.py, openttd.py, game_locales.py and html_prose.py, the shared rules cleaning.py and
sentence_pairs.py, splits.py (dedup, split, counts), corpus_file.py (the file's name and bytes) and
credits.py (the licence file). The parsing and filtering functions are pure (strings in,
strings out) so they are tested without Debian: tests/data/test_build_corpus.py.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # run as a script, only data/ is on sys.path; the package needs the root

from data.corpus_file import corpus_stem, gzip_bytes, rows_to_tsv
from data.credits import render_attribution
from data.debian_packages import deb_version, download_debs, extract_members
from data.source_readers import read_source
from data.sources import EXTRA_SOURCES, MORE_SOURCES, PLUS_SOURCES, SOURCE_INFO, SOURCES, WORDS_SOURCES
from data.splits import check_split_sizes, count_rows, format_counts, make_rows


def build(
    out: Path, cache: Path, attribution: Path, extra: bool = False, more: bool = False, words: bool = False
) -> dict[str, collections.Counter]:
    """Download, read, deduplicate, split and write one corpus and its attribution file; return its counts."""
    started = time.monotonic()
    sources = ((PLUS_SOURCES + MORE_SOURCES if more else PLUS_SOURCES if extra else SOURCES)
               + (WORDS_SOURCES if words else ()))
    all_packages = [p for name in sources for p in SOURCE_INFO[name].packages]
    debs = download_debs(all_packages, cache)
    versions = {p: deb_version(d) for p, d in debs.items()}
    triples: list[tuple[str, str, str]] = []
    for name in sources:
        info = SOURCE_INFO[name]
        files = []
        for pkg in info.packages:
            files += extract_members(debs[pkg], info.members, cache / "extract" / debs[pkg].stem)
        pairs = read_source(name, files)
        print(f"{name:<12} {len(files):>3} file(s) -> {len(pairs):>6} candidate pairs", flush=True)
        triples += [(name, en, de) for en, de in pairs]
    rows = make_rows(triples)
    counts = count_rows(rows, sources)
    problems = check_split_sizes(counts)
    if problems:
        sys.exit("; ".join(problems))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip_bytes(rows_to_tsv(rows)))
    # the file's name in the repo
    corpus = f"data/{corpus_stem(extra, more, words)}.tsv.gz"
    attribution.write_text(render_attribution(counts, versions, sources, corpus), encoding="utf-8")
    print(f"\n{len(triples)} candidates -> {len(rows)} pairs after deduplication\n")
    print(format_counts(counts))
    print(
        f"\nwrote {out} ({out.stat().st_size / 1e6:.2f} MB) and {attribution} "
        f"in {time.monotonic() - started:.0f} s"
    )
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="corpus to write (default: data/en-de.tsv.gz, with --extra "
                             "data/en-de-plus.tsv.gz, with --more data/en-de-plus2.tsv.gz)")
    parser.add_argument("--cache", type=Path, default=REPO_ROOT / ".cache" / "debs",
                        help="where .deb files are downloaded and extracted (git-ignored)")
    parser.add_argument("--attribution", type=Path, default=None,
                        help="licence file to write (default: ATTRIBUTION.md next to --out, "
                             "with --extra ATTRIBUTION-plus.md, with --more ATTRIBUTION-plus2.md)")
    parser.add_argument("--extra", action="store_true",
                        help=f"add the sources {', '.join(EXTRA_SOURCES)} (after the default ones)")
    parser.add_argument("--more", action="store_true",
                        help=f"implies --extra, and adds a third tier: {', '.join(MORE_SOURCES)} "
                             "-> data/en-de-plus2.tsv.gz")
    parser.add_argument("--ding-words", action="store_true",
                        help="adds a last tier, Ding's one- and two-word entries of common words (needs wordfreq: "
                             "requirements-data.txt) -> data/en-de[-plus|-plus2]-words.tsv.gz")
    args = parser.parse_args(argv)
    stem = corpus_stem(args.extra, args.more, args.ding_words)
    out = args.out or REPO_ROOT / "data" / f"{stem}.tsv.gz"
    attribution = args.attribution or out.parent / f"ATTRIBUTION{stem.removeprefix('en-de')}.md"
    build(out, args.cache, attribution, extra=args.extra or args.more, more=args.more, words=args.ding_words)
    return 0


if __name__ == "__main__":
    sys.exit(main())
