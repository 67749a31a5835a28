"""The inputs of the mini-batch methods (`learn_many`, `predict_many`, `predict_proba_many`).

A batch is one of:

- a pandas DataFrame: row i is the dict of its non-missing entries (NaN and None are pandas'
  marks of a missing value), in the frame's column order; rows are named by the frame's index;
- a sequence of dicts (a list, a tuple, any iterable of dicts): row i is the i-th dict as it is;
- a `scipy.sparse` matrix or array (CSR, or any format scipy converts to CSR): row i is the dict
  of its stored entries, in increasing column order (duplicate entries summed, as scipy does),
  its values as float64; column j is the feature ``features[j]`` when the caller names the
  columns (a vocabulary: distinct names, one per column), else the int j itself (hashed ids).

Rows of a sequence or a matrix are named by their position. Every model learns a batch exactly
as the `learn_one` loop over its rows (`river_cw.base`); the compiled engine runs the loop in C
(`river_cw/_batch.h`), CSR columns resolved to the model's weights once per batch.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

__all__ = ["Rows"]


class Rows:
    """A batch as rows: `index` names them, `row(i)` is the dict `learn_one` gets for row i;
    `dicts` is the list of them (None for a CSR batch, whose rows are made when asked for) and
    `csr` the CSR arrays ``(data, indices, indptr, features or None, n_columns)``; `frame`
    says whether they came as a DataFrame (whose batch results are pandas objects)."""

    __slots__ = ("index", "dicts", "csr", "frame")

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
        data, indices, indptr, keys, _ = self.csr
        a, b = indptr[i], indptr[i + 1]
        columns = indices[a:b].tolist()
        names = columns if keys is None else [keys[j] for j in columns]
        return dict(zip(names, data[a:b].tolist()))

    def all(self) -> list[dict]:
        return self.dicts if self.dicts is not None else [self.row(i) for i in range(len(self))]

    @classmethod
    def of(cls, X, features=None, reserved=()) -> Rows:
        """The rows of the batch `X` (see the module docstring); `features` names the columns of
        a sparse `X`; no name may equal one of `reserved` (the intercept's)."""
        if sparse.issparse(X):
            return cls._of_sparse(X, features, reserved)
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
        for i, x in enumerate(dicts):
            if not isinstance(x, dict):
                raise TypeError(f"row {i}: a row is a dict of features, got {type(x).__name__}")
        return cls(range(len(dicts)), dicts=dicts)

    @classmethod
    def _of_sparse(cls, X, features, reserved) -> Rows:
        X = X.tocsr()
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        n_rows, n_columns = X.shape
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X has values of dtype {X.dtype}: learn_many needs real numbers")
        if features is not None:
            features = list(features)
            if len(features) != n_columns:
                raise ValueError(f"features has {len(features)} names for {n_columns} columns")
            try:
                distinct = set(features)
            except TypeError as error:
                raise TypeError(f"features must be hashable: {error}") from None
            if len(distinct) != n_columns:
                raise ValueError("features must name every column differently")
            for name in reserved:
                if name in distinct:
                    raise ValueError(f"features must not name a column {name!r}")
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
