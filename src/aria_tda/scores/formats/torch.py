"""torch tensors and ``.pt``/``.pth`` files (dattri, captum, LogIX outputs saved with torch).

A file holds a tensor, or a dict holding one 2-D tensor (pick with ``key``) and optionally
``row_ids`` (a list of strings). Files are memory-mapped (``torch.load(mmap=True,
weights_only=True)``); legacy (non-zip) files are loaded whole.

Orientation: dattri's score functions return ``(n_train, n_test)`` — ARIA's orientation.
captum's ``TracInCP.influence`` and LogIX return ``(n_test, n_train)``: read those with
``transpose=True`` (``--transpose``). Sparse tensors are refused (densify them first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, FileFormatError, expected, library_message
from aria_tda.scores.source import ScoreSource, check_matrix_shape, expected_text

__all__ = ["TorchSource", "load_torch"]

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
            dtype = np.dtype(str(tensor.dtype).removeprefix("torch."))
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

    try:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:  # legacy (non-zip) files cannot be memory-mapped
            if "mmap" not in str(exc) and "zip" not in str(exc):
                raise
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for bad files
        raise FileFormatError(
            f"{path}: not a readable torch file ({library_message(exc)})"
        ) from None
    row_ids = None
    if isinstance(obj, dict):
        tensors = {str(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}
        if ROW_IDS_KEY in obj and not isinstance(obj[ROW_IDS_KEY], torch.Tensor):
            row_ids = list(obj[ROW_IDS_KEY])
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
