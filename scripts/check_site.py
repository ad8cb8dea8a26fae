"""Check a built documentation site: no raw Sphinx role, nothing loaded from the network.

Usage: ``python scripts/check_site.py SITE_DIR`` after ``mkdocs build -d SITE_DIR``.

Fails (exit 1, one line per finding) when a page's HTML holds

- a Sphinx role the API reference did not rewrite: ``:func:`` followed by a backtick or by
  ``<code>`` (how Markdown renders the backtick), likewise ``:math:``, ``:class:``, … — the
  docstrings' roles are rewritten by ``docs/hooks/sphinx_roles.py``;
- a ``.. math::`` directive, or TeX that was not turned into MathML (``docs/hooks/mathml.py``);
- a script, style sheet, font, image or frame loaded from another host (``http://``,
  ``https://`` or ``//``), a ``preconnect``/``dns-prefetch`` hint to one, or a CSS
  ``url(...)``/``@import`` of one: the site must work offline. Links a reader follows
  (``<a href>``) are allowed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROLES = (
    "func", "meth", "class", "mod", "attr", "data", "exc", "obj", "const", "type", "any",
    "math", "eq", "cite", "ref", "doc", "term", "numref",
)  # fmt: skip
_ROLE_RE = re.compile(r":(?:py:)?(?:" + "|".join(ROLES) + r"):(?:`|&#96;|<code>)")
_DIRECTIVE_RE = re.compile(r"\.\. (?:math|note|warning|seealso|code-block)::")
_RAW_TEX_RE = re.compile(r'class="arithmatex">\s*\\[(\[]')
_EXTERNAL = r"(?:https?:)?//"
_TAG_RE = re.compile(
    r"<(?P<tag>script|link|img|iframe|source|audio|video|embed|object)\b[^>]*>", re.I
)
_LOADING_ATTR_RE = re.compile(
    r"\b(?P<attr>src|href|data|srcset|poster)\s*=\s*[\"']?(?P<url>" + _EXTERNAL + r"[^\"'\s>]+)",
    re.I,
)
_CSS_URL_RE = re.compile(
    r"(?:url\(\s*[\"']?|@import\s+[\"'])(?P<url>" + _EXTERNAL + r"[^\"')\s]+)", re.I
)
#: ``rel`` values of a ``<link>`` that make the browser fetch (or connect to) its ``href``.
_LOADING_RELS = frozenset(
    {"stylesheet", "icon", "preload", "prefetch", "preconnect", "dns-prefetch",
     "modulepreload", "manifest", "apple-touch-icon"}
)  # fmt: skip


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _external_loads(text: str) -> Iterator[tuple[int, str]]:
    for tag in _TAG_RE.finditer(text):
        element = tag["tag"].lower()
        for attr in _LOADING_ATTR_RE.finditer(tag[0]):
            name = attr["attr"].lower()
            # <link> with rel=canonical/alternate/… is not a load; stylesheets, icons, fonts,
            # preloads and connection hints are.
            if element == "link" and name == "href":
                rel = re.search(r"\brel\s*=\s*[\"']?([^\"'>]+)", tag[0], re.I)
                rels = set(rel[1].lower().split()) if rel else set()
                if not rels & _LOADING_RELS:
                    continue
            yield _line(text, tag.start()), f"<{element} {name}={attr['url']}>"
    for url in _CSS_URL_RE.finditer(text):
        yield _line(text, url.start()), f"CSS url({url['url']})"


def check_page(text: str) -> list[tuple[int, str]]:
    """The findings in one HTML or CSS file.

    Parameters
    ----------
    text : str
        The file's text.

    Returns
    -------
    list of (int, str)
        ``(line, what)`` for each raw role, unconverted math and external load, in order.
    """
    found = list(_external_loads(text))
    for pattern, what in (
        (_ROLE_RE, "raw role {!r}"),
        (_DIRECTIVE_RE, "raw directive {!r}"),
        (_RAW_TEX_RE, "TeX not converted to MathML"),
    ):
        found += [(_line(text, m.start()), what.format(m[0])) for m in pattern.finditer(text)]
    return sorted(found)


def check_site(site: Path) -> list[str]:
    """The findings over a built site's HTML pages and style sheets.

    Parameters
    ----------
    site : Path
        The folder ``mkdocs build -d`` wrote.

    Returns
    -------
    list of str
        ``path:line: what``, one per finding; empty when the site is clean.

    Raises
    ------
    FileNotFoundError
        When ``site`` holds no ``index.html`` (not a built site).
    """
    if not (site / "index.html").is_file():
        raise FileNotFoundError(f"site: expected a built mkdocs site (with index.html), got {site}")
    findings = []
    for path in sorted([*site.rglob("*.html"), *site.rglob("*.css")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(site)
        findings += [f"{rel}:{line}: {what}" for line, what in check_page(text)]
    return findings


def main(argv: list[str]) -> int:
    """Command line: ``check_site.py SITE_DIR``; exit 0 when clean, 1 with findings, 2 on misuse."""
    if len(argv) != 1:
        print("usage: check_site.py SITE_DIR", file=sys.stderr)
        return 2
    try:
        findings = check_site(Path(argv[0]))
    except FileNotFoundError as error:
        print(f"check_site: {error}", file=sys.stderr)
        return 2
    for finding in findings[:200]:
        print(finding)
    if findings:
        print(f"check_site: {len(findings)} problem(s) in {argv[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
