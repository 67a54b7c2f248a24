"""mkdocs hook: render the docstrings' Sphinx roles as links (mkdocs.yml, ``hooks:``).

The docstrings write cross-references as Sphinx roles (``:func:`~taskbfs.search```,
``:meth:`from_edges```); mkdocstrings' numpy parser leaves them as text, which Markdown turns
into ``:func:<code>~taskbfs.search</code>``. Once every page is rendered (``on_env``, before
mkdocs-autorefs fixes references at priority -50), each role becomes an autorefs reference
when its target is documented on the site (a full path, or a short name that ends exactly one
documented identifier), else code text. Only resolvable targets are linked, so
``mkdocs build --strict`` stays free of unresolved-reference warnings.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
from pathlib import Path

from mkdocs.plugins import event_priority

_ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj|const):<code>(~?)([\w.]+)</code>")


def _identifiers(docs_dir: Path) -> set[str]:
    """Every identifier the API pages document: each ``::: name`` object and, for a module
    or a class, its public members (what mkdocstrings renders with the site's filters)."""
    found: set[str] = set()
    for page in docs_dir.rglob("*.md"):
        for name in re.findall(r"^::: ([\w.]+)", page.read_text(), flags=re.MULTILINE):
            found.update(_with_members(name))
    return found


def _with_members(name: str) -> set[str]:
    module_name, _, attribute = name.rpartition(".")
    try:
        obj = importlib.import_module(name)
    except ImportError:
        obj = getattr(importlib.import_module(module_name), attribute)
    names = {name}
    for member, value in vars(obj).items():
        if member.startswith("_"):
            continue
        if inspect.ismodule(obj) and getattr(value, "__module__", None) != obj.__name__:
            continue  # imported there, documented where it is defined
        names.add(f"{name}.{member}")
        if inspect.isclass(value):
            names.update(f"{name}.{member}.{m}" for m in vars(value) if not m.startswith("_"))
    return names


def _resolve(target: str, known: set[str], by_suffix: dict[str, list[str]]) -> str | None:
    if target in known:
        return target
    candidates = by_suffix.get(target.rsplit(".", 1)[-1], [])
    matches = [c for c in candidates if c == target or c.endswith("." + target)]
    return matches[0] if len(set(matches)) == 1 else None


def _links(autorefs, identifier: str) -> bool:
    """Whether mkdocs-autorefs knows a page and anchor for ``identifier``."""
    if autorefs is None:
        return False
    try:
        autorefs.get_item_url(identifier)
    except KeyError:
        return False
    return True


@event_priority(0)
def on_env(env, config, files):
    autorefs = config.plugins.get("autorefs")
    known = {i for i in _identifiers(Path(config.docs_dir)) if _links(autorefs, i)}
    by_suffix: dict[str, list[str]] = {}
    for identifier in known:
        by_suffix.setdefault(identifier.rsplit(".", 1)[-1], []).append(identifier)

    def replace(match: re.Match) -> str:
        tilde, target = match.groups()
        shown = target.rsplit(".", 1)[-1] if tilde else target
        identifier = _resolve(target, known, by_suffix)
        if identifier is None:
            return f"<code>{html.escape(shown)}</code>"
        return (f'<autoref identifier="{html.escape(identifier)}" optional>'
                f"<code>{html.escape(shown)}</code></autoref>")

    for file in files:
        page = file.page
        if page is not None and page.content:
            page.content = _ROLE.sub(replace, page.content)
    return env
