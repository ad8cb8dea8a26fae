"""Track listings the audio demo writes: paths relative to the listing itself.

A path in a tracks/inputs file means one thing everywhere in ARIA: relative paths resolve
against the folder of the file that names them (:func:`aria_tda.features.extract.collect_inputs`).
The demo's working folder may itself be relative to wherever the user started it, so every
listing names its files relative to its own folder — which also keeps a demo folder movable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["paths_for_listing"]


def paths_for_listing(paths: Iterable[str | os.PathLike[str]],
                      listing: str | os.PathLike[str]) -> list[str]:
    """The ``paths`` as a listing at ``listing`` must write them (relative to its folder).

    Parameters
    ----------
    paths : iterable of path
        Files, absolute or relative to the current working folder.
    listing : path
        The listing file that will name them.

    Returns
    -------
    list of str
        POSIX paths relative to ``listing``'s folder.
    """
    base = Path(listing).absolute().parent
    return [Path(os.path.relpath(Path(p).absolute(), base)).as_posix() for p in paths]
