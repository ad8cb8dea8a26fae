"""Reading a pickle without running it: every global it names stands for an inert object.

A checkpoint or a torch score file is a pickle, and unpickling imports and calls whatever
globals it names. ARIA reads such files with an unpickler whose ``find_class`` answers, for
every global outside a reader's allow-list, :func:`inert_class`: a subclass of :class:`Inert`
named after the global. It imports nothing and calls nothing; it keeps what the pickle hands
it (constructor arguments, state, items) so a reader can still pull plain values out of it
(an OmegaConf config's ``_content``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

__all__ = ["Inert", "inert_class"]


class Inert:
    """What a global outside an allow-list unpickles to: its name and the data given to it.

    Attributes
    ----------
    qualname : str
        ``module.name`` of the global it stands for (a class attribute of each subclass).
    """

    qualname = "?"

    def __new__(cls, *args: Any, **kwargs: Any) -> Inert:
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.__dict__["_args"] = args

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slots state)
            merged: dict[str, Any] = {}
            for part in state:
                if isinstance(part, Mapping):
                    merged.update(part)
            state = merged
        if isinstance(state, Mapping):
            self.__dict__.update(state)
        else:
            self.__dict__["_state"] = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.__dict__.setdefault("_items", {})[key] = value

    def append(self, value: Any) -> None:
        """Kept under ``_list`` (a list-like global's items)."""
        self.__dict__.setdefault("_list", []).append(value)

    def extend(self, values: Any) -> None:
        """Kept under ``_list`` (a list-like global's items)."""
        self.__dict__.setdefault("_list", []).extend(values)

    def __repr__(self) -> str:
        return f"<not loaded: {self.qualname}>"


@functools.lru_cache(maxsize=1024)
def inert_class(module: str, name: str) -> type[Inert]:
    """The :class:`Inert` subclass standing for the global ``module.name`` (one per name).

    Parameters
    ----------
    module, name : str
        What the pickle's ``GLOBAL`` or ``STACK_GLOBAL`` opcode names.
    """
    return type(name, (Inert,), {"qualname": f"{module}.{name}"})
