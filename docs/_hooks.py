"""mkdocs hook: render the docstrings' Sphinx roles as links (mkdocs.yml, ``hooks:``).

The docstrings write cross-references as Sphinx roles (``:func:`~taskbfs.bfs```,
``:meth:`from_edges```); mkdocstrings' numpy parser leaves them as text, which Markdown turns
into ``:func:<code>~taskbfs.bfs</code>``. Once every page is rendered (``on_env``, before
mkdocs-autorefs fixes references at priority -50), each role becomes an autorefs reference
when its target is documented on the site (a full path, or a short name that ends exactly one
documented identifier), else code text. Only resolvable targets are linked, so
``mkdocs build --strict`` stays free of unresolved-reference warnings.
"""

from __future__ import annotations

import html
import re

from mkdocs.plugins import event_priority

_ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj|const):<code>(~?)([\w.]+)</code>")


def _identifiers(autorefs) -> set[str]:
    found: set[str] = set()
    for name in ("_primary_url_map", "_secondary_url_map"):
        found.update(getattr(autorefs, name, {}) or {})
    return {i for i in found if re.fullmatch(r"[\w.]+", i)}


def _resolve(target: str, known: set[str], by_suffix: dict[str, list[str]]) -> str | None:
    if target in known:
        return target
    candidates = by_suffix.get(target.rsplit(".", 1)[-1], [])
    matches = [c for c in candidates if c == target or c.endswith("." + target)]
    return matches[0] if len(set(matches)) == 1 else None


@event_priority(0)
def on_env(env, config, files):
    autorefs = config.plugins.get("autorefs")
    known = _identifiers(autorefs) if autorefs is not None else set()
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
