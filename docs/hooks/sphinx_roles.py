r"""Sphinx roles in docstrings, rewritten for mkdocstrings (a griffe extension).

ARIA's numpydoc docstrings use reStructuredText roles, read by any Sphinx-based tool and by
``help()``. The documentation site is built by mkdocs, whose Markdown would print them as
they are (``:func:`` followed by a code span). Before mkdocstrings parses a docstring this
extension rewrites, outside code:

- a cross-reference role (``:func:``, ``:meth:``, ``:class:``, ``:mod:``, ``:attr:``,
  ``:data:``, ``:exc:``, ``:obj:``, ``:const:``, ``:type:``, ``:any:``, also with the ``py:``
  domain) into an *optional* autorefs link: a link when the target is documented on the site,
  else the name as inline code. The name is resolved in the docstring's own scope, as Python
  would (``:func:`diagnose``` inside ``aria_tda.diagnostics`` links to
  ``aria_tda.diagnostics.diagnose``). ``~a.b.c`` shows ``c``; ``!name`` never links;
  ``title <target>`` shows the title. Functions and methods read ``name()``, as in Sphinx;
- ``:math:`x``` into ``$x$`` and a ``.. math::`` directive into one ``$$ … $$`` block per
  equation; pymdownx.arithmatex marks them and ``docs/hooks/mathml.py`` turns them into
  MathML, so the site needs no script to show formulas;
- any other role (``:eq:``, ``:cite:``, ``:ref:``, …) into inline code of its text;
- a role in the type of a numpydoc ``name : type`` line into plain text (types are printed
  verbatim, not read as Markdown).

Code is left alone: ````literal```` spans, fenced blocks and doctest lines.
:func:`rewrite_roles` is the pure function; :class:`SphinxRoles` applies it to every docstring
of a package once griffe has loaded it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator

import griffe

#: Roles that name a Python object (the ``py:`` domain is optional).
XREF_ROLES = frozenset(
    {"func", "meth", "class", "mod", "attr", "data", "exc", "obj", "const", "type", "any"}
)
#: Roles whose object is called: shown with ``()`` after the name, as Sphinx does.
CALLABLE_ROLES = frozenset({"func", "meth"})

_ROLE = r":(?P<role>[a-z]+(?::[a-z]+)?):`(?P<text>[^`]+)`"
#: A literal span (left alone) or a role, in that order of preference.
_INLINE_RE = re.compile(r"(?P<literal>``.+?``)|" + _ROLE, re.DOTALL)
_ROLE_RE = re.compile(_ROLE)
_TITLE_TARGET_RE = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_DOCTEST_RE = re.compile(r"^\s*>>>(\s|$)")
_MATH_DIRECTIVE_RE = re.compile(r"^(?P<indent>\s*)\.\. math::(?P<rest>.*)$")
#: A numpydoc item line ``name : type`` (also ``a, b : type``): the type is printed verbatim.
_NAME = r"[A-Za-z_*][\w*]*"
_ITEM_LINE_RE = re.compile(rf"^(?P<head>\s*{_NAME}(?:\s*,\s*{_NAME})*\s:\s)(?P<type>.*)$")
#: A directive option line (``:label: eq1``, ``:nowrap:``) inside a ``.. math::`` body.
_OPTION_RE = re.compile(r"^\s*:[\w-]+:")

Resolver = Callable[[str], "str | None"]


def _no_resolution(name: str) -> str | None:
    return None


def _xref(role: str, text: str, resolve: Resolver, *, plain: bool) -> str:
    """One cross-reference role as Markdown (or as plain text in a type)."""
    match = _TITLE_TARGET_RE.match(text)
    title, target = (match["title"], match["target"]) if match else (None, text.strip())
    link = not target.startswith("!")
    target = target.lstrip("!")
    short = target.startswith("~")
    target = re.sub(r"\s+", "", target.lstrip("~").lstrip("."))
    if title is None:
        title = target.rsplit(".", 1)[-1] if short else target
        if role in CALLABLE_ROLES and not title.endswith(")"):
            title += "()"
    if plain:
        return title
    code = f"`{title}`"
    identifier = resolve(target) if link else None
    if identifier is None:
        return code
    return f'<autoref identifier="{html.escape(identifier)}" optional>{code}</autoref>'


def _math_inline(tex: str) -> str:
    return f"${tex.strip()}$"


def _role(match: re.Match[str], resolve: Resolver, *, plain: bool) -> str:
    role = match["role"].removeprefix("py:")
    text = match["text"]
    if role in XREF_ROLES:
        return _xref(role, text, resolve, plain=plain)
    if role == "math":
        return text.strip() if plain else _math_inline(text)
    return text if plain else f"`{text}`"


def _item_type(line: str, resolve: Resolver) -> str:
    """A numpydoc ``name : type`` line with the roles of its type as plain text."""
    item = _ITEM_LINE_RE.match(line)
    if item is None or not _ROLE_RE.search(item["type"]):
        return line
    return item["head"] + _ROLE_RE.sub(lambda m: _role(m, resolve, plain=True), item["type"])


def _prose(text: str, resolve: Resolver) -> str:
    """Rewrite the roles of lines of prose (a role may span lines), literal spans kept."""

    def replace(match: re.Match[str]) -> str:
        if match["literal"] is not None:
            return match["literal"]
        return _role(match, resolve, plain=False)

    return _INLINE_RE.sub(replace, text)


def _math_block(lines: list[str], start: int, indent: str, first: str) -> tuple[list[str], int]:
    """The ``.. math::`` directive at ``lines[start]`` as display-math blocks.

    ``indent`` is the directive's indentation and ``first`` the text after ``.. math::``.
    Returns the Markdown lines (one ``$$`` block an equation, blank lines between them) and the
    index of the first line after the directive's body.
    """
    body = [first.strip()]
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if line.strip() and len(line) - len(line.lstrip()) <= len(indent):
            break
        body.append(line.strip())
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # trailing blank lines belong to what follows
    equations: list[list[str]] = [[]]
    for line in body:
        if not line:
            equations.append([])
        elif not (_OPTION_RE.match(line) and not any(equations[-1])):
            equations[-1].append(line)
    out: list[str] = []
    for equation in (e for e in equations if e):
        out += ["", f"{indent}$$", *(indent + eq for eq in equation), f"{indent}$$"]
    return out[1:], end


def rewrite_roles(text: str, resolve: Resolver = _no_resolution) -> str:
    """Rewrite the Sphinx roles and math directives of one docstring into Markdown.

    Parameters
    ----------
    text : str
        The docstring, as Python holds it (backslashes of TeX already single).
    resolve : callable, optional
        Maps a name as written in a role (``~`` and ``!`` removed) to the identifier of the
        object it names, or None when it names nothing known; a role whose name resolves
        becomes an optional autorefs link, any other an inline code span. By default nothing
        resolves.

    Returns
    -------
    str
        The docstring with no role left outside code spans, fenced blocks and doctests.
    """
    lines = text.split("\n")
    out: list[str] = []
    prose: list[str] = []
    fenced = doctest = False
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _MATH_DIRECTIVE_RE.match(line)
        if fenced or doctest or directive or _FENCE_RE.match(line) or _DOCTEST_RE.match(line):
            out += _prose("\n".join(prose), resolve).split("\n") if prose else []
            prose = []
        if _FENCE_RE.match(line):
            fenced = not fenced
        elif fenced:
            pass
        elif doctest or _DOCTEST_RE.match(line):
            doctest = bool(line.strip())  # a doctest block ends at a blank line
        elif directive:
            block, i = _math_block(lines, i, directive["indent"], directive["rest"])
            before = [""] if out and out[-1].strip() else []
            after = [""] if i < len(lines) and lines[i].strip() else []
            out += before + block + after
            continue
        else:
            prose.append(_item_type(line, resolve))
            i += 1
            continue
        out.append(line)
        i += 1
    out += _prose("\n".join(prose), resolve).split("\n") if prose else []
    return "\n".join(out)


def scope_resolver(obj: griffe.Object, collection: griffe.ModulesCollection) -> Resolver:
    """Resolve names as Python would inside ``obj``, then to their canonical path.

    Parameters
    ----------
    obj : griffe.Object
        The object whose docstring holds the roles.
    collection : griffe.ModulesCollection
        The loaded packages, to find the canonical path of what a name points to.

    Returns
    -------
    callable
        ``name -> identifier or None``: a dotted name that does not start in the scope is taken
        as an absolute path; a bare name that is not in the scope resolves to None.
    """

    def resolve(name: str) -> str | None:
        head, dot, rest = name.partition(".")
        try:
            path = obj.resolve(head) + dot + rest
        except (griffe.NameResolutionError, griffe.AliasResolutionError):
            if not dot:
                return None
            path = name
        try:
            return collection.get_member(path).canonical_path
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return path

    return resolve


def _objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)  # type: ignore[arg-type]


class SphinxRoles(griffe.Extension):
    """Rewrite every docstring of a package once it is loaded (see the module docstring)."""

    def on_package(
        self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: object
    ) -> None:
        """Rewrite the docstrings of ``pkg`` and of all its members, in place."""
        for obj in _objects(pkg):
            if obj.docstring is not None:
                resolve = scope_resolver(obj, loader.modules_collection)
                obj.docstring.value = rewrite_roles(obj.docstring.value, resolve)
                obj.docstring.__dict__.pop("parsed", None)
