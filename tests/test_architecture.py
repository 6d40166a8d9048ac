"""Every package's ``__init__`` docstring lists its modules and subpackages in reading order, one per line
(four spaces, the name, two or more spaces, what it is): a module added, removed or renamed without a word there
fails here, so the map a newcomer reads first cannot drift from the files."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = ("model", "explain", "training", "app", "data", "text")
PACKAGES = sorted(str(init.parent.relative_to(ROOT)) for top in TOP for init in (ROOT / top).rglob("__init__.py")
                  if "__pycache__" not in init.parts)
ENTRY = re.compile(r"^    (\w+)/? {2,}\S", re.MULTILINE)


def listed_in(package: Path) -> list[str]:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text()), clean=False) or ""
    return ENTRY.findall(docstring)


def present_in(package: Path) -> set[str]:
    modules = {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
    return modules | {path.name for path in package.iterdir() if (path / "__init__.py").is_file()}


def test_every_top_level_package_is_a_package():
    assert set(TOP) <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_package_docstring_lists_exactly_its_modules(package):
    listed = listed_in(ROOT / package)
    assert len(listed) == len(set(listed)), f"{package}/__init__.py lists a module twice: {listed}"
    present = present_in(ROOT / package)
    assert not present - set(listed), f"{package}/__init__.py does not list {sorted(present - set(listed))}"
    assert not set(listed) - present, f"{package}/__init__.py lists what is not there: {sorted(set(listed) - present)}"


def test_the_check_fails_on_a_module_the_docstring_leaves_out(tmp_path):
    (tmp_path / "__init__.py").write_text('"""A package.\n\n    first   the first\n"""\n')
    (tmp_path / "first.py").write_text("")
    (tmp_path / "second.py").write_text("")
    assert listed_in(tmp_path) == ["first"] and present_in(tmp_path) == {"first", "second"}


def test_architecture_md_names_every_top_level_package():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    assert [top for top in TOP if f"`{top}/`" not in text] == []
