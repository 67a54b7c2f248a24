"""The documentation: docstring examples run, the site builds, links stay in the repository.

* Every example (``>>>``) in taskbfs's modules runs here with doctest, on tiny graphs and
  the embedded default cluster (``graph/convert.py`` and ``graph/_graph.py`` run in
  ``tests/test_convert.py``); none is marked ``+SKIP``.
* ``mkdocs build --strict`` builds the site (``mkdocs.yml``, ``docs/``) when mkdocs and
  mkdocstrings are installed (the ``test`` and ``docs`` extras have them): a broken
  reference, a missing page or an unparsable docstring fails it. The built pages show no
  raw Sphinx role (``:func:`...```; ``docs/_hooks.py`` renders them as links or code), and
  every ``docs/*.md`` page is in ``nav``. One build serves these tests.
* ``docs/`` links only to pages of the repository; ``py.typed`` is packaged.
"""

from __future__ import annotations

import doctest
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "taskbfs"
DOCTESTED_IN_TEST_CONVERT = {"taskbfs.graph.convert", "taskbfs.graph._graph"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules_with_examples() -> list[str]:
    return sorted(_module_name(p) for p in PACKAGE.rglob("*.py") if ">>>" in p.read_text())


@pytest.mark.parametrize(
    "name", [m for m in _modules_with_examples() if m not in DOCTESTED_IN_TEST_CONVERT])
def test_docstring_examples_run(name):
    if name.startswith("taskbfs.trace"):
        matplotlib = pytest.importorskip("matplotlib", reason="trace's examples plot")
        matplotlib.use("Agg")
    module = importlib.import_module(name)
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0 and outcome.failed == 0, outcome


def test_no_example_is_skipped():
    skipped = [f"{p.relative_to(REPO)}:{i}" for p in PACKAGE.rglob("*.py")
               for i, line in enumerate(p.read_text().splitlines(), 1) if "doctest: +SKIP" in line]
    assert not skipped, skipped


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    """One ``mkdocs build --strict`` of the site, shared by the tests that read it."""
    pytest.importorskip("mkdocs", reason="the docs extra: pip install '.[docs]'")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra: mkdocstrings[python]")
    site = tmp_path_factory.mktemp("docs") / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return site


def test_docs_site_builds(built_site):
    site = built_site
    search = (site / "api" / "search" / "index.html").read_text()
    assert "Breadth-first search from" in search  # bfs's docstring, rendered
    assert "tolist" in re.sub(r"<[^>]+>", "", search)  # with its example (highlighted)
    runtime = (site / "api" / "runtime" / "index.html").read_text()
    assert "address_or_client" in runtime
    for page in ("index", "internals", "deploy"):
        assert (site / ("" if page == "index" else page) / "index.html").is_file(), page


_ROLE = re.compile(r":(func|class|meth|mod|data|attr|exc|obj|const):")
_PRE = re.compile(r"<pre\b.*?</pre>", re.DOTALL)


def test_docs_site_renders_no_raw_sphinx_roles(built_site):
    """docs/_hooks.py turns ``:func:`~taskbfs.search``` into a link (or code text): no page
    shows the role itself, outside the source code it quotes (``<pre>`` blocks)."""
    raw = {}
    for page in sorted(built_site.rglob("*.html")):
        text = _PRE.sub("", page.read_text())
        found = [text[max(m.start() - 40, 0):m.end() + 40] for m in _ROLE.finditer(text)]
        if found:
            raw[page.relative_to(built_site).as_posix()] = found[:3] + [f"({len(found)} in all)"]
    assert not raw, raw
    search = (built_site / "api" / "search" / "index.html").read_text()
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#taskbfs\.search\.result\.'
                     r'BFSResult\.to_dask"><code>to_dask</code></a>', search)


def _nav_pages(items) -> set[str]:
    pages = set()
    for item in items:
        if isinstance(item, str):
            pages.add(item)
        elif isinstance(item, dict):
            for value in item.values():
                pages |= _nav_pages(value) if isinstance(value, list) else {value}
    return pages


def test_every_docs_page_is_in_the_nav(built_site):
    yaml = pytest.importorskip("yaml", reason="mkdocs reads mkdocs.yml with PyYAML")
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert pages - _nav_pages(config["nav"]) == set()
    for page in pages:  # and each is built
        built = "" if page == "index.md" else page.removesuffix(".md")
        assert (built_site / built / "index.html").is_file(), page


_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", sorted(p.relative_to(REPO).as_posix()
                                        for p in (REPO / "docs").rglob("*.md")))
def test_docs_links_stay_in_the_repository(page):
    path = REPO / page
    text = path.read_text()
    for target in _LINK.findall(text):
        if re.match(r"https?://", target):
            assert page != "docs/internals.md", f"internals.md links outside the repo: {target}"
            continue
        resolved = (path.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(REPO / "docs"), f"{page}: {target} leaves docs/"
        assert resolved.exists(), f"{page}: {target} does not exist"
    if page == "docs/internals.md":
        assert "../" not in text and "http" not in text


def test_py_typed_is_packaged():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's tomllib reads pyproject.toml")
    assert (PACKAGE / "py.typed").is_file()
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["taskbfs"]
