r"""TeX to MathML at build time (a mkdocs hook), so formulas show with no script and no network.

pymdownx.arithmatex (``generic: true``) marks inline math as
``<span class="arithmatex">\(…\)</span>`` and display math as
``<div class="arithmatex">\[…\]</div>``; this hook replaces each with the MathML that
latex2mathml writes, which browsers render natively. A formula latex2mathml cannot read fails
the build (a warning, and the site is built with ``--strict``).
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from html import unescape
from typing import Any

from latex2mathml.converter import convert

log = logging.getLogger("mkdocs.hooks.mathml")

_INLINE_RE = re.compile(r'<span class="arithmatex">\\\((?P<tex>.*?)\\\)</span>', re.DOTALL)
_BLOCK_RE = re.compile(r'<div class="arithmatex">\\\[(?P<tex>.*?)\\\]</div>', re.DOTALL)
#: Commands latex2mathml does not know, as the TeX it does.
_FIXES = (
    (re.compile(r"\\arg(?![A-Za-z])"), r"\\operatorname{arg}"),
    (re.compile(r"\\[lr]Vert(?![A-Za-z])"), r"\\|"),
)


_MATHML = "http://www.w3.org/1998/Math/MathML"
ET.register_namespace("", _MATHML)
#: Operators whose subscript a display formula sets below them, as TeX does (\max_d).
_LIMIT_OPERATORS = frozenset({"max", "min", "sup", "inf", "lim", "liminf", "limsup", "det",
                              "gcd", "Pr", "arg max", "arg min", "argmax", "argmin"})
_BELOW = {f"{{{_MATHML}}}msub": f"{{{_MATHML}}}munder",
          f"{{{_MATHML}}}msubsup": f"{{{_MATHML}}}munderover"}


def _limits_below(mathml: str) -> str:
    """Set the subscripts of max, min, lim, … below the operator (display formulas)."""
    root = ET.fromstring(mathml)
    changed = False
    for element in root.iter():
        if (element.tag in _BELOW and len(element)
                and element[0].tag == f"{{{_MATHML}}}mo"
                and (element[0].text or "").strip() in _LIMIT_OPERATORS):
            element.tag = _BELOW[element.tag]
            changed = True
    return ET.tostring(root, encoding="unicode") if changed else mathml


def tex_to_mathml(tex: str, *, display: bool) -> str:
    """One TeX formula as a MathML ``<math>`` element.

    Parameters
    ----------
    tex : str
        The formula, without delimiters (``\\alpha_c``, not ``$\\alpha_c$``).
    display : bool
        True for a display (block) formula, False for one inside text.

    Returns
    -------
    str
        The ``<math>`` element.
    """
    for pattern, replacement in _FIXES:
        tex = pattern.sub(replacement, tex)
    mathml = convert(tex.strip(), display="block" if display else "inline")
    return _limits_below(mathml) if display else mathml


def _replace(match: re.Match[str], *, display: bool, where: str) -> str:
    tex = unescape(match["tex"])
    try:
        mathml = tex_to_mathml(tex, display=display)
    except Exception as error:  # latex2mathml raises many kinds; all mean "cannot read this"
        log.warning("%s: cannot convert the formula %r to MathML: %s", where, tex, error)
        return match[0]
    tag = "div" if display else "span"
    return f'<{tag} class="arithmatex">{mathml}</{tag}>'


def math_to_mathml(page_html: str, *, where: str = "") -> str:
    """Replace arithmatex's inline and display math in a page's HTML by MathML.

    Parameters
    ----------
    page_html : str
        The HTML of a page (mkdocs' ``page.content``).
    where : str, optional
        The page's source path, named in the warning for a formula that cannot be converted.

    Returns
    -------
    str
        The HTML with every formula as a ``<math>`` element.
    """
    page_html = _BLOCK_RE.sub(lambda m: _replace(m, display=True, where=where), page_html)
    return _INLINE_RE.sub(lambda m: _replace(m, display=False, where=where), page_html)


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    """mkdocs event: convert the math of each page after its Markdown is rendered."""
    return math_to_mathml(html, where=page.file.src_uri)
