"""Options as frozen dataclasses whose fields carry their type, range and help.

One declaration per option serves every surface that shows it: the checks in
``__post_init__``, the TOML keys of a study file, CLI defaults and help, and the manifests
(``dataclasses.asdict``). In the style of kronfluence's ``arguments.py``::

    @dataclass(frozen=True)
    class TrakArgs(Options):
        proj_dim: int = option(512, help="projection dimension k", min_value=1)
        regularization: float = option(0.01, help="ridge term λ", min_value=0.0)

``Options.__post_init__`` checks every field against its metadata, converting where
:mod:`aria_tda._checks` converts (an ``int`` field given ``3.0`` is an error; a ``float`` field
given ``3`` becomes ``3.0``) and raises :class:`~aria_tda.errors.ParameterError` naming the field.
``Options.from_mapping`` rejects unknown keys instead of dropping them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from aria_tda._checks import check_choice, check_float, check_int
from aria_tda.errors import ParameterError, expected

__all__ = ["Options", "option", "option_help"]

OptionsT = TypeVar("OptionsT", bound="Options")

_MISSING: Any = dataclasses.MISSING


def option(
    default: Any = _MISSING,
    *,
    help: str,
    min_value: float | None = None,
    max_value: float | None = None,
    min_inclusive: bool = True,
    choices: Collection[Any] | None = None,
    kind: str | None = None,
    check: Callable[[str, Any], Any] | None = None,
    default_factory: Callable[[], Any] | None = None,
    key: str | None = None,
) -> Any:
    """Declare one option field with its help text and its checks.

    Parameters
    ----------
    default : Any
        The default value (omit for a required option).
    help : str
        One sentence shown in ``--help``, the study-file docs and error messages.
    min_value, max_value : float, optional
        Inclusive range for ``int``/``float`` fields (``min_inclusive=False`` makes the lower
        bound strict).
    min_inclusive : bool
        Whether ``min_value`` itself is allowed.
    choices : collection, optional
        The allowed values (for string options).
    kind : {"int", "float", "bool", "str", None}
        Checked type; ``None`` takes it from the field's annotation when that is one of these.
    check : callable, optional
        ``check(name, value) -> value``: an extra check/conversion run after the others
        (``None`` values are passed through untouched unless the check handles them).
    default_factory : callable, optional
        Factory for mutable defaults (tuples are preferred: options are frozen).
    key : str, optional
        The external (TOML/CLI) name, when it differs from the field name.
    """
    meta = {
        "help": help,
        "min_value": min_value,
        "max_value": max_value,
        "min_inclusive": min_inclusive,
        "choices": tuple(choices) if choices is not None else None,
        "kind": kind,
        "check": check,
        "key": key,
    }
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def option_help(cls: type[Options], name: str) -> str:
    """The help text of option ``name`` of ``cls``.

    Parameters
    ----------
    cls : type
        An :class:`Options` subclass.
    name : str
        A field name of ``cls``.
    """
    for f in dataclasses.fields(cls):
        if f.name == name:
            return str(f.metadata.get("help", ""))
    raise ParameterError(expected("name", f"an option of {cls.__name__}", name))


def _kind_of(f: dataclasses.Field[Any]) -> str | None:
    kind = f.metadata.get("kind")
    if kind:
        return str(kind)
    ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    return ann if ann in {"int", "float", "bool", "str"} else None


@dataclasses.dataclass(frozen=True)
class Options:
    """Base class of ARIA's option dataclasses: checks every field on construction."""

    def __post_init__(self) -> None:
        prefix = type(self).__name__
        for f in dataclasses.fields(self):
            if "help" not in f.metadata:
                continue
            name = f.metadata.get("key") or f.name
            value = getattr(self, f.name)
            checked = _check_field(f, name, value, prefix)
            if checked is not value:
                object.__setattr__(self, f.name, checked)

    @classmethod
    def from_mapping(
        cls: type[OptionsT], values: Mapping[str, Any], *, what: str | None = None
    ) -> OptionsT:
        """Build from a mapping, rejecting keys that are not options of ``cls``.

        Parameters
        ----------
        values : mapping
            Option name (or its external ``key``) -> value.
        what : str, optional
            How to name the mapping in the error (default: the class name).
        """
        by_key = {(f.metadata.get("key") or f.name): f.name for f in dataclasses.fields(cls)}
        by_key.update({f.name: f.name for f in dataclasses.fields(cls)})
        unknown = sorted(set(values) - set(by_key))
        if unknown:
            allowed = ", ".join(sorted(by_key))
            raise ParameterError(
                f"{what or cls.__name__}: unknown option(s) {', '.join(map(repr, unknown))}; "
                f"expected some of: {allowed}"
            )
        return cls(**{by_key[k]: v for k, v in values.items()})

    def to_dict(self) -> dict[str, Any]:
        """The options as a plain, JSON-friendly dict (for manifests)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    def replace(self: OptionsT, **changes: Any) -> OptionsT:
        """A copy with some options changed (checked again).

        Parameters
        ----------
        **changes : Any
            Option name -> new value.
        """
        return dataclasses.replace(self, **changes)


def _check_field(f: dataclasses.Field[Any], name: str, value: Any, prefix: str) -> Any:
    meta = f.metadata
    if value is None:
        check = meta.get("check")
        return check(name, value) if check is not None else value
    kind = _kind_of(f)
    lo, hi = meta.get("min_value"), meta.get("max_value")
    if kind == "int":
        value = check_int(name, value, min_value=lo, max_value=hi)
        if lo is not None and not meta.get("min_inclusive", True) and value == lo:
            raise ParameterError(expected(name, f"an integer > {lo}", value))
    elif kind == "float":
        value = check_float(
            name, value, min_value=lo, max_value=hi, min_inclusive=meta.get("min_inclusive", True)
        )
    elif kind == "bool":
        if not isinstance(value, bool):
            raise ParameterError(expected(name, "true or false", value))
    elif kind == "str":
        if not isinstance(value, str):
            raise ParameterError(expected(name, "a string", value))
    choices = meta.get("choices")
    if choices is not None:
        value = check_choice(name, value, choices)
    check = meta.get("check")
    if check is not None:
        value = check(name, value)
    return value
