"""torch tensors and ``.pt``/``.pth`` files (dattri, captum, LogIX outputs saved with torch).

A file holds a tensor, or a dict holding one 2-D tensor (pick with ``key``) and optionally
``row_ids`` (a list of strings). Files are memory-mapped (``torch.load(mmap=True,
weights_only=True)``); legacy (non-zip) files are loaded whole.

Orientation: dattri's score functions return ``(n_train, n_test)`` — ARIA's orientation.
captum's ``TracInCP.influence`` and LogIX return ``(n_test, n_train)``: read those with
``transpose=True`` (``--transpose``). Sparse tensors are refused (densify them first).

Before torch reads a zip file, each storage's element count in the pickle is checked against
the size of its record (:func:`check_storages`: torch memory-maps the file and would read a
short record's neighbours as scores); a ``row_ids`` entry must be a list of strings, and a
dtype NumPy does not know (float8, quantized) is refused in one line.
"""

from __future__ import annotations

import io
import pickle
import struct
import types
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._inert_pickle import Inert, inert_class
from aria_tda.errors import DataError, FileFormatError, expected, library_message
from aria_tda.scores.formats.header import header_error
from aria_tda.scores.source import ScoreSource, check_matrix_shape, expected_text

__all__ = ["TorchSource", "check_storages", "load_torch"]

ROW_IDS_KEY = "row_ids"


class TorchSource(ScoreSource):
    """A 2-D torch tensor (CPU, memory-mapped from a file, or on a GPU).

    Parameters
    ----------
    tensor : torch.Tensor [shape=(M, T)]
        Dense, real-valued.
    path : pathlib.Path, optional
        The file it was loaded from.
    key : str, optional
        Its key in the file's dict.
    row_ids : array-like of str, optional
        Row ids.
    manifest : dict, optional
        The artefact's manifest.
    """

    io_bound = False

    def __init__(
        self,
        tensor: Any,
        *,
        path: Path | None = None,
        key: str | None = None,
        row_ids: Any = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        import torch

        if tensor.layout != torch.strided:
            raise DataError(
                expected_text(
                    "scores",
                    "a dense tensor (call .to_dense() first)",
                    f"a sparse tensor ({tensor.layout}, shape {tuple(tensor.shape)})",
                )
            )
        if tensor.dim() != 2:
            check_matrix_shape(tuple(tensor.shape))
        if tensor.is_complex() or tensor.dtype == torch.bool:
            raise DataError(
                expected("scores", "a real floating-point or integer dtype", str(tensor.dtype))
            )
        dtype: Any = "bfloat16" if tensor.dtype == torch.bfloat16 else str(tensor.dtype)
        if dtype != "bfloat16":
            try:
                dtype = np.dtype(str(tensor.dtype).removeprefix("torch."))
            except TypeError:  # float8, quantized and other types NumPy does not know
                raise DataError(
                    expected("scores", "a real floating-point or integer dtype", dtype)
                ) from None
        super().__init__(tuple(tensor.shape), dtype, row_ids=row_ids, manifest=manifest)
        self.tensor = tensor
        self.path = path
        self.key = key
        self.io_bound = path is not None or tensor.device.type != "cpu"

    def torch_rows(self, start: int, stop: int) -> Any:
        """Rows as a torch tensor on the tensor's own device (no copy when possible).

        Parameters
        ----------
        start, stop : int
            Row range.
        """
        return self.tensor[start:stop]

    def _to_numpy(self, rows: Any) -> np.ndarray:
        import torch

        rows = rows.detach()
        if rows.device.type != "cpu":
            rows = rows.cpu()
        want = torch.float32 if self.block_dtype == np.float32 else torch.float64
        if rows.dtype != want:
            rows = rows.to(want)
        return rows.contiguous().numpy()

    def _raw_rows(self, start: int, stop: int) -> np.ndarray:
        return self._to_numpy(self.tensor[start:stop])

    def _raw_columns(self, start: int, stop: int) -> np.ndarray:
        return self._to_numpy(self.tensor[:, start:stop])

    def _transposed(self) -> ScoreSource:
        out = TorchSource(self.tensor.t(), path=self.path, key=self.key, manifest=self.manifest)
        out.transposed = not self.transposed
        return out


def load_torch(path: Path, key: str | None, manifest: Any) -> TorchSource:
    """Open the score tensor of a torch file.

    Parameters
    ----------
    path : pathlib.Path
        A ``.pt``/``.pth`` file.
    key : str, optional
        Which tensor of a dict; default: the only 2-D one.
    manifest : dict, optional
        The artefact's manifest, carried by the source.
    """
    import torch

    check_storages(path)
    try:
        with warnings.catch_warnings():  # torch's notes on a file are noise here (one line each)
            warnings.simplefilter("ignore")
            obj = _torch_load(torch, path)
    except Exception as exc:  # torch raises many types for bad files
        raise FileFormatError(
            f"{path}: not a readable torch file ({library_message(exc)})"
        ) from None
    row_ids = None
    if isinstance(obj, dict):
        tensors = {str(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}
        if ROW_IDS_KEY in obj and not isinstance(obj[ROW_IDS_KEY], torch.Tensor):
            row_ids = obj[ROW_IDS_KEY]
            if not isinstance(row_ids, list | tuple) or not all(
                isinstance(r, str | int) and not isinstance(r, bool) for r in row_ids
            ):
                raise header_error(f"{path}[{ROW_IDS_KEY!r}]", ROW_IDS_KEY, row_ids,
                                   "a list of strings (one id per row)")
            row_ids = list(row_ids)
        if key is None:
            two_d = [k for k, v in tensors.items() if v.dim() == 2]
            if len(two_d) != 1:
                raise FileFormatError(
                    f"{path}: holds {len(two_d)} 2-D tensors {sorted(two_d)}; pass key= (--key) "
                    "to pick the score matrix"
                )
            key = two_d[0]
        if key not in tensors:
            raise FileFormatError(f"{path}: no tensor named {key!r}; it holds {sorted(tensors)}")
        tensor = tensors[key]
    elif isinstance(obj, torch.Tensor):
        if key is not None:
            raise FileFormatError(f"{path}: holds a single tensor, not a dict; drop key={key!r}")
        tensor = obj
    else:
        raise FileFormatError(
            f"{path}: expected a tensor or a dict holding one, got {type(obj).__name__}"
        )
    return TorchSource(tensor, path=path, key=key, row_ids=row_ids, manifest=manifest)


class _StorageScan(pickle.Unpickler):
    """Collects the persistent ids ``('storage', type, key, location, numel)`` of a torch pickle.

    No global is imported or called: every one is an
    :class:`~aria_tda._inert_pickle.Inert` subclass named after it.
    """

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.storages: list[tuple[str, str, Any]] = []

    def find_class(self, module: str, name: str) -> Any:
        return inert_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage":
            kind = getattr(pid[1], "qualname", str(pid[1]))
            self.storages.append((str(pid[2]), kind, pid[4]))
        return Inert()


def _storage_itemsize(kind: str) -> int | None:
    """Bytes per element of a pickled storage type (``torch.FloatStorage``), None if unknown."""
    import torch

    module, _, name = kind.rpartition(".")
    if name == "UntypedStorage":
        return 1
    cls = getattr(torch, name, None) if module == "torch" and name.endswith("Storage") else None
    try:
        with warnings.catch_warnings():  # torch calls typed storages deprecated
            warnings.simplefilter("ignore")
            return int(cls.dtype.itemsize) if cls is not None else None
    except (AttributeError, TypeError, RuntimeError):
        return None


def check_storages(path: Path) -> None:
    """Refuse a torch zip file whose pickle claims storages larger or smaller than its records.

    A storage's element count lives in the pickle (``data.pkl``), its bytes in the record
    ``data/KEY`` of the zip; torch memory-maps the file and would read past a short record into
    the bytes after it. The pickle is scanned without importing or calling anything it names.
    Legacy (non-zip) files are not checked (torch reads them whole).

    Parameters
    ----------
    path : pathlib.Path
        A ``.pt``/``.pth`` file.

    Raises
    ------
    FileFormatError
        A storage's ``numel`` x itemsize is not the size of its record, or its record is absent.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(names) != 1:
                return
            prefix = names[0][: -len("data.pkl")]
            records = {i.filename: i.file_size for i in zf.infolist()}
            data = zf.read(names[0])
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        return  # not a zip (legacy torch file) or unreadable: torch.load says what it is
    scan = _StorageScan(data)
    try:
        scan.load()
    except Exception:  # a pickle torch will refuse too; it says why
        return
    for key, kind, numel in scan.storages:
        record = f"{prefix}data/{key}"
        where = f"{path}[{record!r}]"
        if record not in records:
            raise FileFormatError(f"{where}: the pickle names storage {key!r}, the file has no "
                                  "such record")
        itemsize = _storage_itemsize(kind)
        if itemsize is None:
            continue
        size = records[record]
        if type(numel) is not int or numel * itemsize != size:
            raise header_error(where, "numel", numel,
                               f"{size // itemsize} elements of {itemsize} bytes ({kind})",
                               f"{size} bytes in this storage's record")


def _torch_load(torch: Any, path: Path) -> Any:
    """``torch.load`` with ``weights_only=True``, memory-mapped where the file allows it.

    A file saved with ``pickle_protocol`` 3 to 5 is read through torch's own weights-only
    unpickler after its object pickle is rewritten in protocol 2 (:func:`protocol2`), since
    that unpickler knows only protocol 2's opcodes; nothing is executed either way.
    """
    if _pickle_protocol(path) > 2:
        module = _protocol2_module(torch)
        if module is not None:
            return torch.load(path, map_location="cpu", weights_only=False,
                              pickle_module=module, mmap=True)
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except RuntimeError as exc:  # legacy (non-zip) files cannot be memory-mapped
        if "mmap" not in str(exc) and "zip" not in str(exc):
            raise
        return torch.load(path, map_location="cpu", weights_only=True)


def _pickle_protocol(path: Path) -> int:
    """The pickle protocol of a torch zip file's ``data.pkl`` (0 when not told)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(names) != 1:
                return 0
            with zf.open(names[0]) as fh:
                head = fh.read(2)
    except (OSError, zipfile.BadZipFile, ValueError):
        return 0
    return head[1] if len(head) == 2 and head[0] == 0x80 else 0


def _protocol2_module(torch: Any) -> Any:
    """A ``pickle_module`` for ``torch.load``: torch's weights-only unpickler, fed protocol 2."""
    try:
        from torch import _weights_only_unpickler as safe
    except ImportError:  # pragma: no cover - a torch without it refuses such files as before
        return None

    class Unpickler(safe.Unpickler):
        def __init__(self, file: Any, *, encoding: str = "bytes") -> None:
            super().__init__(io.BytesIO(protocol2(file.read())), encoding=encoding)

    return types.SimpleNamespace(__name__="aria_tda.protocol2", Unpickler=Unpickler,
                                 load=safe.load)


#: Opcodes that push a ``str``, and memo opcodes (pickle's own names).
_STRING_OPS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"})
_PUT_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GET_OPS = frozenset({"GET", "BINGET", "LONG_BINGET"})


def protocol2(data: bytes) -> bytes:
    """A pickle of protocol 3-5 rewritten with protocol 2's opcodes (nothing is unpickled).

    ``FRAME`` is dropped, ``MEMOIZE`` becomes ``BINPUT``, ``STACK_GLOBAL`` becomes ``GLOBAL``
    and strings are written as ``BINUNICODE`` (memoized strings are written out again where
    they are used, so every memo entry left refers to an object). Other opcodes are copied as
    they are: the unpickler that reads the result refuses what it does not know.

    Parameters
    ----------
    data : bytes
        The pickle (torch's ``data.pkl``).
    """
    import pickletools

    out = bytearray()
    pending: list[str] = []  # strings pushed but not written yet (a STACK_GLOBAL may take two)
    strings: dict[int, str] = {}  # memo slots holding a string
    memo: set[int] = set()  # every memo slot set so far (MEMOIZE takes the next: len(memo))
    top_is_string = False

    def flush() -> None:
        for text in pending:
            raw = text.encode("utf-8", "surrogatepass")
            out.extend(b"X" + struct.pack("<I", len(raw)) + raw)
        pending.clear()

    def put(index: int) -> None:
        out.extend(b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index))

    ops: list[tuple[Any, Any, Any]] = list(pickletools.genops(data))
    for i, (op, arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
        name = op.name
        if name == "FRAME":
            continue
        if name == "PROTO":
            out.extend(b"\x80\x02")
        elif name in _STRING_OPS:
            pending.append(str(arg))
            top_is_string = True
        elif name in _GET_OPS and int(arg) in strings:
            pending.append(strings[int(arg)])
            top_is_string = True
        elif name == "MEMOIZE" or name in _PUT_OPS:
            index = len(memo) if name == "MEMOIZE" else int(arg)
            memo.add(index)
            if top_is_string:
                strings[index] = pending[-1]
            else:
                strings.pop(index, None)
                put(index)
        elif name == "STACK_GLOBAL":
            if len(pending) < 2:
                raise ValueError("STACK_GLOBAL without two strings before it")
            mod, attr = pending[-2], pending[-1]
            if "\n" in mod + attr:
                raise ValueError(f"a global named with a line break: {mod!r}, {attr!r}")
            del pending[-2:]
            flush()
            out.extend(b"c" + mod.encode("utf-8") + b"\n" + attr.encode("utf-8") + b"\n")
            top_is_string = False
        else:
            flush()
            out.extend(data[pos:end])
            top_is_string = False
    return bytes(out)
