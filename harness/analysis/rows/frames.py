"""Query results as pandas frames: what DuckDB's own conversion (``.df()``) gives, from its
Arrow result.

``.df()`` makes a Python object of every string it hands over (the rows of 100,000 runs x 120
columns: about 0.4 s of CPU more than the Arrow result); pandas wraps Arrow's strings as they
are. The frame is the one ``.df()`` gives, column for column (``tests/analysis/
test_frames.py``): an integer or boolean column with a NULL becomes pandas' nullable ``Int64``
or ``boolean``, a string column of NULLs only holds ``None`` as objects; a result with a column
of another type (a list, a struct, a decimal, a date) is converted by ``.df()`` itself.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

TYPES = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_boolean,
    pa.types.is_string,
    pa.types.is_timestamp,
)
"""The Arrow types converted here (a result with a column of another type: by ``.df()``,
:meth:`harness.analysis.rows.load.Selection.frame`)."""


def as_duckdb_frame(table: pa.Table) -> pd.DataFrame:
    """``table`` (of the types :data:`TYPES`) as DuckDB's ``.df()`` converts its rows."""
    out: pd.DataFrame = table.to_pandas()
    for name, column in zip(table.column_names, table.columns, strict=True):
        if column.null_count == 0:
            continue
        kind = column.type
        if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
            mask = column.is_null().to_numpy(zero_copy_only=False)
            values = column.fill_null(False if pa.types.is_boolean(kind) else 0).to_numpy()
            array = (
                pd.arrays.BooleanArray(values, mask)
                if pa.types.is_boolean(kind)
                else pd.arrays.IntegerArray(values, mask)
            )
            out[name] = array
        elif pa.types.is_string(kind) and column.null_count == len(column):
            out[name] = pd.Series([None] * len(column), index=out.index, dtype=object)
    return out
