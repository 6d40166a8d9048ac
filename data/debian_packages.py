"""Debian side: download .deb files with apt-get into a cache and extract the wanted members.

The only part that runs other programs (apt-get, dpkg-deb); it needs no root and changes nothing on
the system.
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from pathlib import Path


def find_deb(cache: Path, package: str) -> Path | None:
    """The cached .deb of a package (package names never hold "_", so the glob is exact)."""
    found = sorted(cache.glob(f"{package}_*.deb"))
    return found[-1] if found else None


def download_debs(packages: Iterable[str], cache: Path) -> dict[str, Path]:
    """apt-get download every package missing from the cache; return package -> .deb path."""
    cache.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if find_deb(cache, p) is None]
    if missing:
        print(f"apt-get download {len(missing)} package(s) into {cache} ...", flush=True)
        proc = subprocess.run(
            ["apt-get", "download", "-q", *missing], cwd=cache, capture_output=True, text=True
        )
        if proc.returncode != 0:
            sys.exit(
                f"apt-get download failed:\n{proc.stderr.strip()}\n"
                "(on a fresh machine run 'apt-get update' once first)"
            )
    debs = {p: find_deb(cache, p) for p in packages}
    lost = [p for p, d in debs.items() if d is None]
    if lost:
        sys.exit(f"no .deb found in {cache} for: {', '.join(lost)}")
    return debs  # type: ignore[return-value]


def deb_version(deb: Path) -> str:
    return subprocess.run(
        ["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True, check=True
    ).stdout.strip()


def extract_members(deb: Path, patterns: Iterable[str], dest: Path) -> list[Path]:
    """Write the members of a .deb matching the patterns below dest; return their paths, sorted.

    `dpkg-deb --fsys-tarfile` is streamed through tarfile so only the wanted files touch the
    disk. A ".done" marker makes a re-run skip the (slow, xz) decompression."""
    marker = dest / ".done"
    if not marker.exists():
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                name = member.name.lstrip("./")
                if member.isfile() and any(fnmatch.fnmatch(name, p) for p in patterns):
                    target = dest / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
        if proc.wait() != 0:
            sys.exit(f"dpkg-deb --fsys-tarfile {deb} failed")
        marker.touch()
    return sorted(p for p in dest.rglob("*") if p.is_file() and p.name != ".done")
