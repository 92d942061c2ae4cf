"""The set-up's `.venv` is made by uv and has no pip of its own (`scripts/setup_venv.py`): no
page tells a reader to run `.venv/bin/pip`, or a bare `pip install -e`, to add an extra to it;
the command the pages and the tool's own messages give instead is the set-up's installer, and
every extra it names is one the project defines."""

from __future__ import annotations

import re
import tomllib

from docs_examples import ROOT, pages

from oracle.envs.installer import extra_command

PAGES = [*pages(), ROOT / "CONTRIBUTING.md"]
# a pip the set-up's .venv lacks: its own, or whichever `pip` is first on PATH
_PIP_INTO_VENV = re.compile(r"\.venv/bin/pip\b|(?<![\w/.~-])pip install -e")
_SETUP = re.compile(r"scripts/setup_venv\.py \.venv ([\w,-]+)")


def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def test_no_page_adds_an_extra_with_a_pip_the_venv_lacks():
    found = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for page in PAGES
        for n, line in enumerate(page.read_text().splitlines(), 1)
        if _PIP_INTO_VENV.search(line)
    ]
    assert found == []


def test_every_install_command_given_names_extras_the_project_defines():
    given = [m[1] for page in PAGES for m in _SETUP.finditer(page.read_text())]
    given += [m[1] for m in (_SETUP.search(extra_command(e)) for e in ("ray", "s3")) if m]
    assert len(given) >= 8  # the pages' lines (trace, ray, s3, docs) and the two messages
    for extras in given:
        assert set(extras.split(",")) <= _extras(), extras
