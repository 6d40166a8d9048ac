"""The corpus file: its name for a set of tiers, and its bytes (a TSV of the rows, gzip'd so that the same rows
give the same bytes).
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterable

from data.splits import Row


def rows_to_tsv(rows: Iterable[Row]) -> bytes:
    """UTF-8 TSV with header "source split en de", LF line ends, csv quoting.

    Text never holds tabs or newlines (normalised away); a field holding a double quote is
    quoted the csv way, so read it with pandas.read_csv(sep="\\t", keep_default_na=False) or the
    csv module, not with str.split."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(["source", "split", "en", "de"])
    for r in rows:
        writer.writerow([r.source, r.split, r.en, r.de])
    return buf.getvalue().encode("utf-8")


def gzip_bytes(data: bytes) -> bytes:
    """gzip with mtime 0 and no file name in the header: same input, same bytes."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def corpus_stem(extra: bool, more: bool, words: bool) -> str:
    """The corpus file's name without .tsv.gz; its attribution file is ATTRIBUTION<what follows en-de>.md."""
    return "en-de" + ("-plus2" if more else "-plus" if extra else "") + ("-words" if words else "")
