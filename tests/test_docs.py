"""README.md is the short way in and docs/ the reference (mkdocs.yml; .ci/run builds it with --strict, which checks
the links between the docs' own pages): README stays short, its links lead to files that exist, and every
`python -m` command that README.md or docs/*.md shows names a module whose --help runs."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_README_LINES = 200

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target) and ![alt](target)
# `python -m NAME`, `python3 -m NAME`, `.venv/bin/python -m NAME`, ...: the module, whatever comes after it
PYTHON_M = re.compile(r"(?:^|[\s`(/])python3?(?:\.\d+)? -m ([A-Za-z_][\w.]*)")


def relative_links(text: str) -> list[str]:
    """The targets of text's Markdown links that point into the repository (no scheme, no mere #anchor)."""
    targets = [match.group(1) for match in LINK.finditer(text)]
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def documented_modules() -> list[str]:
    modules = set()
    for path in [README, *DOCS]:
        modules.update(PYTHON_M.findall(path.read_text()))
    return sorted(modules)


def test_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md: {len(lines)} lines, at most {MAX_README_LINES}: move to docs/"


def test_every_relative_link_in_the_readme_leads_to_a_file():
    links = relative_links(README.read_text())
    assert links, "README.md links into the docs"
    missing = [link for link in links if not (ROOT / unquote(link.split("#", 1)[0])).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_readme_links_every_page_of_the_docs():
    linked = {(ROOT / unquote(link.split("#", 1)[0])).resolve() for link in relative_links(README.read_text())}
    unlinked = [path.name for path in DOCS if path.resolve() not in linked]
    assert not unlinked, f"docs pages README.md does not link: {unlinked}"


def test_the_commands_name_modules():
    modules = documented_modules()
    # the ones a newcomer needs first; a regular expression that found none of them would pass everything below
    assert {"model", "pytest", "training.train"} <= set(modules), modules


def help_exit(module: str) -> tuple[str, int, str]:
    result = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=180)
    return module, result.returncode, result.stderr[-2000:]


@pytest.mark.slow  # a dozen processes, each importing torch
def test_every_documented_module_answers_help():
    """One process per distinct module, as many at once as there are cores (each pays torch's import)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        answers = list(pool.map(help_exit, documented_modules()))
    failed = [f"python -m {module} --help exited {code}:\n{stderr}" for module, code, stderr in answers if code != 0]
    assert not failed, "\n\n".join(failed)
