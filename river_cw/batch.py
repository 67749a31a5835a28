"""The mini-batch methods (`learn_many`, `predict_many`, `predict_proba_many`) and their inputs.

A batch is one of:

- a pandas DataFrame: row i is the dict of its non-missing entries (NaN and None are pandas'
  marks of a missing value), in the frame's column order; rows are named by the frame's index;
- a sequence of dicts (a list, a tuple, any iterable of dicts): row i is the i-th dict as it is;
- a `scipy.sparse` matrix or array (CSR, or any format scipy converts to CSR): row i is the dict
  of its stored entries in their stored order, values as float64 (a column stored twice in a
  row is one feature, its values summed in that order, as scipy sums them); column j is the
  feature ``features[j]`` when the caller names the columns (a vocabulary: a list of distinct
  names, one per column; a `ValueError` names two columns named alike), else the int j itself
  (hashed ids).

Rows of a sequence or a matrix are named by their position. Every model learns a batch exactly
as the `learn_one` loop over its rows (`river_cw.base.LinearClassifier`); the compiled engine runs the loop in C
(`river_cw/_engines/_batch.h`), CSR columns resolved to the model's weights once per batch.
"""

from __future__ import annotations

import builtins
import sys
from itertools import repeat

import numpy as np

from .validation import check_weight

__all__ = ["Rows", "column", "sample_weights"]


class Rows:
    """A batch as rows: `index` names them, `row(i)` is the dict `learn_one` gets for row i;
    `dicts` is the list of them (None for a CSR batch, whose rows are made when asked for) and
    `csr` the CSR arrays ``(data, indices, indptr, features or None, n_columns)``; `frame`
    says whether they came as a DataFrame (whose batch results are pandas objects)."""

    __slots__ = ("csr", "dicts", "frame", "index")

    def __init__(self, index, dicts=None, csr=None, frame=False):
        self.index = index
        self.dicts = dicts
        self.csr = csr
        self.frame = frame

    def __len__(self) -> int:
        return len(self.index)

    def row(self, i: int) -> dict:
        if self.dicts is not None:
            return self.dicts[i]
        data, indices, indptr, keys, n_columns = self.csr
        a, b = indptr[i], indptr[i + 1]
        row: dict = {}
        for j, value in zip(indices[a:b].tolist(), data[a:b].tolist()):
            if not 0 <= j < n_columns:  # as the compiled batch kernel refuses it
                raise ValueError(f"CSR column index {j} out of range")
            name = j if keys is None else keys[j]
            row[name] = row[name] + value if name in row else value  # a repeated entry: summed
        return row

    def slice(self, first: int, last: int | None = None) -> Rows:
        """The rows from `first` to `last` (None: to the end), with their names."""
        if first == 0 and last is None:
            return self
        rows = builtins.slice(first, last)
        if self.dicts is not None:
            return Rows(self.index[rows], dicts=self.dicts[rows], frame=self.frame)
        data, indices, indptr, keys, n_columns = self.csr
        ends = builtins.slice(first, None if last is None else last + 1)
        return Rows(self.index[rows], csr=(data, indices, indptr[ends], keys, n_columns))

    def check_names(self) -> None:
        """`ValueError` when two columns of the batch are named alike (the compiled loop checks
        this itself, in `river_cw/_engines/_batch.h`); names that cannot be hashed are left to the rows."""
        if self.csr is None or self.csr[3] is None:
            return
        _, indices, indptr, keys, n_columns = self.csr
        _, first = np.unique(indices[indptr[0] : indptr[-1]], return_index=True)
        seen: dict = {}
        for j in indices[indptr[0] + np.sort(first)].tolist():  # in order of appearance
            if len(keys) != n_columns:  # a name's hash changed the list: the kernel's refusal
                raise RuntimeError("features changed size during learn_many")
            try:
                other = seen.setdefault(keys[j], j)
            except TypeError:
                continue
            if other != j:
                raise ValueError(f"features names columns {other} and {j} alike: {keys[j]!r}")

    def all(self) -> list[dict]:
        self.check_names()
        return self.dicts if self.dicts is not None else [self.row(i) for i in range(len(self))]

    @classmethod
    def of(cls, X, features=None) -> Rows:
        """The rows of the batch `X` (see the module docstring); `features` names the columns of
        a sparse `X`."""
        sparse = sys.modules.get("scipy.sparse")  # no sparse X before scipy.sparse is imported
        if sparse is not None and sparse.issparse(X):
            return cls._of_sparse(X, features)
        if features is not None:
            raise TypeError("features names the columns of a scipy.sparse X only")
        if hasattr(X, "to_dict") and hasattr(X, "columns"):  # a pandas DataFrame
            return cls(X.index, dicts=_frame_rows(X), frame=True)
        if isinstance(X, (dict, str, bytes)) or not hasattr(X, "__iter__"):
            raise TypeError(
                "X must be a pandas DataFrame, a sequence of dicts or a scipy.sparse matrix, "
                f"got {type(X).__name__}"
            )
        dicts = X if type(X) is list else list(X)
        if not all(map(isinstance, dicts, repeat(dict))):  # a loop in C: the common case
            i, x = next((i, x) for i, x in enumerate(dicts) if not isinstance(x, dict))
            raise TypeError(f"row {i}: a row is a dict of features, got {type(x).__name__}")
        return cls(range(len(dicts)), dicts=dicts)

    @classmethod
    def _of_sparse(cls, X, features) -> Rows:
        X = X.tocsr()
        n_rows, n_columns = X.shape
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X has values of dtype {X.dtype}: learn_many needs real numbers")
        if features is not None:
            features = features if type(features) is list else list(features)
            if len(features) != n_columns:
                raise ValueError(f"features has {len(features)} names for {n_columns} columns")
        data = np.ascontiguousarray(X.data, dtype=np.float64)
        indices = np.ascontiguousarray(X.indices, dtype=np.intp)
        indptr = np.ascontiguousarray(X.indptr, dtype=np.intp)
        return cls(range(n_rows), csr=(data, indices, indptr, features, n_columns))


def _frame_rows(X) -> list[dict]:
    """The rows of a DataFrame as dicts of their non-missing entries (Python scalars)."""
    return [
        {f: v for f, v in row.items() if not (v is None or (isinstance(v, float) and v != v))}
        for row in X.to_dict(orient="records")
    ]


def _is_number(w) -> bool:
    return isinstance(w, (int, float)) or not hasattr(w, "__len__")


def sample_weights(w, n: int) -> list:
    """One sample weight per row: a number for every row (as `check_weight` reads it, so the
    compiled loop sees floats), or a sequence of them."""
    if not _is_number(w):
        return column(w, n, "w")
    try:
        w = check_weight(w)
    except (TypeError, ValueError):
        pass  # the first row's learn_one raises it, named
    return [w] * n


def column(values, n: int, name: str) -> list:
    """A Series or sequence as a list of Python values, checked to have one per row."""
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries for {n} rows of X")
    return values
