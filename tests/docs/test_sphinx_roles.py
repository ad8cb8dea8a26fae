r"""The docs site's rewriting of Sphinx roles (docs/hooks/sphinx_roles.py) and TeX (mathml.py).

The samples are real docstring text from ``src/`` (quoted below with their module); the last
tests run the rewriting over every docstring of the package as it is today.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "docs" / "hooks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_docs_hooks_{name}", HOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


pytest.importorskip("griffe")  # the docs extra (mkdocstrings-python brings it)
roles = _load("sphinx_roles")

#: Any role left in rewritten text, outside ``literal`` spans.
LEFT_ROLE = re.compile(r"(``.+?``)|(:[a-z]+(?::[a-z]+)?:`)", re.DOTALL)
DOCTEST = re.compile(r"^\s*(>>>|\.\.\.)(\s|$)")


def _roles_left(text: str) -> list[str]:
    return [m[2] for m in LEFT_ROLE.finditer(text) if m[2]]


def _resolver(table: dict[str, str]):
    return table.get


def test_xref_roles_become_optional_links_or_code():
    # aria_tda/verdict.py, module docstring
    text = (
        "The rule asks one question — does the top-K follow the query? — from the measures of\n"
        ":mod:`aria_tda.diagnostics.dependence` (thresholds: the fields of "
        ":class:`VerdictThresholds`):"
    )
    resolve = _resolver({
        "aria_tda.diagnostics.dependence": "aria_tda.diagnostics.dependence",
        "VerdictThresholds": "aria_tda.verdict.VerdictThresholds",
    })
    out = roles.rewrite_roles(text, resolve)
    assert out == (
        "The rule asks one question — does the top-K follow the query? — from the measures of\n"
        '<autoref identifier="aria_tda.diagnostics.dependence" optional>'
        "`aria_tda.diagnostics.dependence`</autoref> (thresholds: the fields of "
        '<autoref identifier="aria_tda.verdict.VerdictThresholds" optional>'
        "`VerdictThresholds`</autoref>):"
    )


def test_short_forms_callables_and_unresolved_names():
    # aria_tda/attribution/sanity.py: "~" shows the last name; functions read name()
    text = "interval over queries (:func:`~aria_tda.attribution.sanity_stats.bootstrap_mean`). An"
    out = roles.rewrite_roles(text)  # nothing resolves: inline code, no link
    assert out == "interval over queries (`bootstrap_mean()`). An"
    linked = roles.rewrite_roles(text, lambda name: name)
    assert linked == (
        "interval over queries (<autoref identifier="
        '"aria_tda.attribution.sanity_stats.bootstrap_mean" optional>`bootstrap_mean()`'
        "</autoref>). An"
    )
    # "!" never links; an explicit title is kept
    assert roles.rewrite_roles(":class:`!Foo`", lambda n: n) == "`Foo`"
    assert roles.rewrite_roles(":func:`the kernel <a.b>`", lambda n: n) == (
        '<autoref identifier="a.b" optional>`the kernel`</autoref>'
    )
    # other roles: their text as code
    assert roles.rewrite_roles("see :eq:`kappa` and :cite:`han2025`") == (
        "see `kappa` and `han2025`"
    )


def test_inline_math_and_a_role_split_over_two_lines():
    # aria_tda/alignment.py: a :math: role that runs onto the next line
    text = (
        "fold, :math:`R^2_{\\mathrm{cv}} = 1 - \\sum (u - \\hat u)^2 /\n"
        "\\sum (u - \\bar u)^2`, clipped to :math:`[0, 1]`."
    )
    out = roles.rewrite_roles(text)
    assert out == (
        "fold, $R^2_{\\mathrm{cv}} = 1 - \\sum (u - \\hat u)^2 /\n"
        "\\sum (u - \\bar u)^2$, clipped to $[0, 1]$."
    )


def test_math_directive_becomes_display_blocks():
    # aria_tda/alignment.py, module docstring (a two-line equation, then prose)
    text = (
        "groups :math:`\\Psi`,\n"
        "\n"
        ".. math::\n"
        "\n"
        "    \\alpha_c^{\\max} = \\max_{d} |\\mathrm{corr}(u_1, \\psi_d)|, \\qquad\n"
        "    \\alpha_c^{\\mathrm{reg}} = "
        "\\max_{\\Psi} \\sqrt{R^2_{\\mathrm{cv}}(u_1 \\mid \\Psi)},\n"
        "\n"
        "where :math:`d` ranges over every single dimension"
    )
    assert roles.rewrite_roles(text).split("\n") == [
        "groups $\\Psi$,",
        "",
        "$$",
        "\\alpha_c^{\\max} = \\max_{d} |\\mathrm{corr}(u_1, \\psi_d)|, \\qquad",
        "\\alpha_c^{\\mathrm{reg}} = \\max_{\\Psi} \\sqrt{R^2_{\\mathrm{cv}}(u_1 \\mid \\Psi)},",
        "$$",
        "",
        "where $d$ ranges over every single dimension",
    ]


def test_one_line_math_directive_keeps_its_indentation():
    # aria_tda/attribution/losses.py: a directive on one line, then a numpydoc section
    text = (
        "    Mean next-token NLL per window.\n"
        "\n"
        "    .. math:: \\ell_{seq}(x) = \\frac{1}{L-1}\\sum_{t=1}^{L-1} -\\log p_\\theta(x_t)\n"
        "\n"
        "    Parameters\n"
        "    ----------"
    )
    assert roles.rewrite_roles(text).split("\n") == [
        "    Mean next-token NLL per window.",
        "",
        "    $$",
        "    \\ell_{seq}(x) = \\frac{1}{L-1}\\sum_{t=1}^{L-1} -\\log p_\\theta(x_t)",
        "    $$",
        "",
        "    Parameters",
        "    ----------",
    ]


def test_a_blank_line_separates_equations_and_options_are_dropped():
    text = ".. math::\n   :label: eq1\n\n   a = b\n\n   c = d\nafter"
    assert roles.rewrite_roles(text).split("\n") == [
        "$$", "a = b", "$$", "", "$$", "c = d", "$$", "", "after",
    ]  # fmt: skip


def test_code_is_left_alone():
    # aria_tda/study/config.py: a literal that looks like a role
    literal = 'Adds ``source:line:`` to the messages of the checks, ``:func:`x` ``.'
    assert roles.rewrite_roles(literal) == literal
    doctest = ">>> f(':func:`x`')\n... ':math:`y`'\n\n... and this (:meth:`check`)."
    assert roles.rewrite_roles(doctest).split("\n") == [
        ">>> f(':func:`x`')", "... ':math:`y`'", "", "... and this (`check()`).",
    ]  # fmt: skip
    fenced = "```python\n:class:`A`\n```\n:class:`A`"
    assert roles.rewrite_roles(fenced) == "```python\n:class:`A`\n```\n`A`"


def test_a_role_in_a_numpydoc_type_is_plain_text():
    # aria_tda/features/audio/chords.py: a parameter whose type names a function
    text = "    beta, bass_weight : see :func:`chord_log_emissions`\n        The weights."
    assert roles.rewrite_roles(text, lambda n: n) == (
        "    beta, bass_weight : see chord_log_emissions()\n        The weights."
    )


def _package_docstrings() -> list[tuple[str, str]]:
    found = []
    for root in ("src", "experiments/src"):
        for path in sorted((ROOT / root).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Expr)
                    and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)
                ):
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value.value))
    return found


def test_no_role_survives_in_any_docstring_of_the_package():
    docstrings = _package_docstrings()
    assert len(docstrings) > 500
    rewritten = 0
    for where, text in docstrings:
        out = roles.rewrite_roles(text, lambda n: n)
        prose = "\n".join(line for line in out.split("\n") if not DOCTEST.match(line))
        assert not _roles_left(prose), (where, _roles_left(prose))
        assert ".. math::" not in out, where
        assert out.count("$$") % 2 == 0, where
        rewritten += out != text
    assert rewritten > 100


def test_griffe_extension_resolves_names_in_scope():
    import griffe

    extensions = griffe.load_extensions(f"{HOOKS / 'sphinx_roles.py'}:SphinxRoles")
    package = griffe.load(
        "aria_tda", search_paths=[str(ROOT / "src")], extensions=extensions,
        docstring_parser="numpy",
    )  # fmt: skip
    value = package["verdict"].docstring.value
    assert not _roles_left(value)
    identifiers = re.findall(r'<autoref identifier="([^"]+)" optional>', value)
    # ":class:`VerdictThresholds`" in aria_tda.verdict resolves to the class in that module
    assert "aria_tda.verdict.VerdictThresholds" in identifiers
    for identifier in identifiers:
        if identifier.startswith("aria_tda."):
            assert package.modules_collection.get_member(identifier) is not None, identifier
    # the numpydoc sections still parse as sections
    classify = package["verdict.classify"]
    kinds = [section.kind.value for section in classify.docstring.parse("numpy")]
    assert kinds[:3] == ["text", "parameters", "returns"]


def test_tex_becomes_mathml():
    pytest.importorskip("latex2mathml")
    mathml = _load("mathml")
    html = (
        '<p>with <span class="arithmatex">\\(\\lVert g_s\\rVert\\)</span> and</p>\n'
        '<div class="arithmatex">\\[\\arg\\max_k r_k &lt; 1\\]</div>'
    )
    out = mathml.math_to_mathml(html)
    assert out.count("<math") == 2 and "\\" not in out
    assert 'display="block"' in out and 'display="inline"' in out
    # the page's escaped "<" is read as "<" and written escaped again, as MathML's operator
    assert "<mo>&lt;</mo>" in out
    # a display formula sets the limits of max below it, as TeX does; inline keeps them aside
    assert "<munder><mo>max</mo>" in out
    inline = mathml.tex_to_mathml("\\max_k r_k", display=False)
    assert "<msub><mo>max</mo>" in inline
