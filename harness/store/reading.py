"""A DuckDB connection for a user's own SQL over the results that only reads
(:func:`harness.api.connect`): every statement it is given passes :func:`only_reads` first, and
the relations it returns cannot be written to files or tables.

The confinement (:func:`harness.store.confine.confine`) keeps a connection's files under the
results folder; this keeps it from writing inside it: ``con.execute("COPY ... TO '<a row
file>'")``, ``EXPLAIN ANALYZE COPY``, ``PREPARE``/``EXECUTE``, ``rel.write_parquet(<a row file>)``
and ``rel.query("t", "COPY ...")`` are each refused with a :class:`UserError`.
"""

from __future__ import annotations

from typing import Any

import duckdb

from harness.core.errors import UserError
from harness.store.confine import Confinement, only_reads

_RUNS_SQL = frozenset({"execute", "executemany", "sql", "query", "from_query"})
"""Connection methods whose first argument is SQL to run."""

_PASSES = frozenset(
    {
        "fetchall",
        "fetchone",
        "fetchmany",
        "fetchdf",
        "fetch_df",
        "fetch_df_chunk",
        "fetchnumpy",
        "fetch_arrow_table",
        "fetch_record_batch",
        "df",
        "arrow",
        "to_arrow_table",
        "pl",
        "torch",
        "tf",
        "description",
        "rowcount",
        "interrupt",
        "close",
        "register",
        "unregister",
        "table",
        "view",
        "values",
        "read_csv",
        "read_parquet",
        "read_json",
        "from_csv_auto",
        "from_parquet",
        "from_df",
        "from_arrow",
        "list_filesystems",
        "get_table_names",
    }
)
"""Connection attributes that run no SQL of the caller's (relations they return are wrapped)."""

_WRITES = frozenset(
    {
        "write_parquet",
        "to_parquet",
        "write_csv",
        "to_csv",
        "to_table",
        "create",
        "insert",
        "insert_into",
        "update",
    }
)
"""Relation methods that write a file or a table."""


def _refused(name: str) -> UserError:
    return UserError(
        f"{name}: this connection reads only the results (harness.connect); write what you read "
        "with pandas (.df().to_parquet(...)) or use duckdb.connect() for a database of your own"
    )


def _wrapped(value: Any, how: Confinement) -> Any:
    """``value``, a relation wrapped so that it cannot write."""
    if isinstance(value, duckdb.DuckDBPyRelation):
        return ReadingRelation(value, how)
    return value


class ReadingRelation:
    """A DuckDB relation that reads: its methods pass through, except those that write
    (:data:`_WRITES`, refused) and ``query`` (its SQL checked by :func:`only_reads`)."""

    def __init__(self, rel: duckdb.DuckDBPyRelation, how: Confinement) -> None:
        self._rel = rel
        self._how = how

    def query(self, virtual_table_name: str, sql_query: str) -> Any:
        """``sql_query`` over this relation (named ``virtual_table_name``), if it reads."""
        only_reads(sql_query, self._how)
        return _wrapped(self._rel.query(virtual_table_name, sql_query), self._how)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy, pickle and the like probe for these
            raise AttributeError(name)
        if name in _WRITES:
            raise _refused(f"{name}()")
        found = getattr(self._rel, name)
        if not callable(found):
            return _wrapped(found, self._how)
        return lambda *args, **kwargs: _wrapped(found(*args, **kwargs), self._how)

    def __len__(self) -> int:
        return len(self._rel)

    def __repr__(self) -> str:
        return repr(self._rel)

    def __str__(self) -> str:
        return str(self._rel)


class ReadingConnection:
    """A DuckDB connection over the results that runs only SQL that reads (see the module);
    ``execute`` returns the connection itself, as DuckDB's does, so ``.fetchall()`` follows."""

    def __init__(self, con: duckdb.DuckDBPyConnection, how: Confinement) -> None:
        self._con = con
        self._how = how

    def execute(self, query: str, parameters: object = None) -> ReadingConnection:
        """Run ``query`` (with ``parameters``) if it reads; fetch its rows from the connection."""
        only_reads(query, self._how)
        self._con.execute(query, parameters)
        return self

    def sql(self, query: str, **kwargs: Any) -> Any:
        """The relation of ``query`` if it reads (None for a statement without rows)."""
        only_reads(query, self._how)
        return _wrapped(self._con.sql(query, **kwargs), self._how)

    query = sql

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy, pickle and the like probe for these
            raise AttributeError(name)
        if name in _RUNS_SQL:  # executemany, from_query: their SQL checked as execute's is
            method = getattr(self._con, name)

            def checked(sql: str, *args: Any, **kwargs: Any) -> Any:
                only_reads(sql, self._how)
                found = method(sql, *args, **kwargs)
                return self if found is self._con else _wrapped(found, self._how)

            return checked
        if name not in _PASSES:
            raise _refused(name)
        found = getattr(self._con, name)
        if not callable(found):
            return found
        return lambda *args, **kwargs: _wrapped(found(*args, **kwargs), self._how)

    def __enter__(self) -> ReadingConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self._con.close()
