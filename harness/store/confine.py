"""SQL over the results that reads only the results: what a DuckDB connection of
:func:`harness.store.db.connect` may touch, and a query that Ctrl-C stops.

By default (:meth:`Confinement.from_env`) a connection reads files only under the results root:
DuckDB's external access is turned off with the root as its one allowed directory (plus the
files a caller writes through DuckDB, ``writable``), extensions are neither installed nor loaded,
spilling to a temp folder is off, a memory limit bounds each query, and the configuration is
locked, so no ``SET`` gives any of it back. ``COPY ... TO`` a file elsewhere, ``ATTACH`` of a file
elsewhere, ``INSTALL``/``LOAD``, ``read_csv('/etc/passwd')``, ``read_text`` or ``glob`` outside
the root each fail with DuckDB's one-line permission error. ``harness query`` also runs only
``SELECT`` (and ``EXPLAIN``) statements (:func:`only_reads`), so it cannot write inside the root
either. ``--unsafe`` or ``HARNESS_SQL_UNSAFE=1`` gives full DuckDB back (an export with ``COPY``).

A query runs in a thread of its own while the main thread waits for it (:func:`interruptible`):
Ctrl-C interrupts DuckDB (``con.interrupt()``) within a fraction of a second, which a query
running in the main thread never sees (Python handles a signal only between bytecodes).
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb

from harness.core import env
from harness.core.errors import UserError

DEFAULT_MEMORY = "25%"
"""DuckDB's memory limit for SQL over the results when none is given: a quarter of the RAM."""

READING = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})
"""Statement types ``harness query`` runs (``SELECT``, ``WITH``, ``FROM``, ``DESCRIBE``,
``SHOW``, ``SUMMARIZE``, ``VALUES`` and ``EXPLAIN`` are among them)."""

_MEMORY = re.compile(r"^\s*\d+(\.\d+)?\s*(%|[KMGT]i?B|B|bytes)?\s*$", re.IGNORECASE)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Confinement:
    """What SQL over a results folder may do."""

    unsafe: bool = False
    """Full DuckDB: files anywhere, extensions, any statement (``--unsafe``)."""
    memory_limit: str = DEFAULT_MEMORY
    """DuckDB's ``memory_limit`` for each query: ``4GB``, ``512MiB`` or a share of the RAM,
    ``25%``; also the most a ``harness query`` result may hold."""

    def __post_init__(self) -> None:
        if not _MEMORY.match(self.memory_limit):
            raise UserError(
                f"memory limit {self.memory_limit!r}: expected a size such as 4GB, 512MiB or 25%"
            )

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        unsafe: bool = False,
        memory_limit: str | None = None,
    ) -> Confinement:
        """The confinement the environment asks for (``HARNESS_SQL_UNSAFE``,
        ``HARNESS_SQL_MEMORY``), ``unsafe`` and ``memory_limit`` (a command's flags) first.

        Raises:
            UserError: a variable's value is not one it takes.
        """
        given = env.SQL_UNSAFE.get(environ)
        if given and given.lower() not in ("1", "true", "0", "false"):
            raise UserError(f"{env.SQL_UNSAFE.name}={given!r}: expected 1, true, 0 or false")
        unsafe = unsafe or (given or "").lower() in ("1", "true")
        memory = memory_limit or env.SQL_MEMORY.get(environ) or DEFAULT_MEMORY
        return cls(unsafe=unsafe, memory_limit=memory)


def confine(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    how: Confinement,
    writable: tuple[Path, ...] = (),
    readable: tuple[str, ...] = (),
) -> None:
    """Restrict ``con`` to reading under ``root`` (and writing the files ``writable``), as
    ``how`` says; its views are made first (they are read when queried, under ``root``).

    ``readable``: the escaped names and patterns the views read when ``root``'s path holds a
    glob character (``res[[]1[]]/g/runs/*`` for ``res[1]``, :func:`harness.core.paths.duck_path`):
    DuckDB checks a name as it is spelled, then each file it expands to, which must lie under
    ``root`` itself. The escaped folder is never allowed as a whole: a sibling folder named
    ``res[[]1[]]`` would be.

    Raises:
        UserError: DuckDB refuses the memory limit.
    """
    try:
        con.execute(f"SET memory_limit = '{how.memory_limit.strip()}'")
    except duckdb.Error as e:
        raise UserError(f"memory limit {how.memory_limit!r}: {str(e).splitlines()[0]}") from None
    # No progress bar drawn on the terminal beside a query's output (DuckDB draws one after 2 s);
    # in Jupyter without ipywidgets DuckDB refuses the setting itself: there is no bar to stop.
    with contextlib.suppress(duckdb.Error):
        con.execute("SET enable_progress_bar = false")
    if how.unsafe:
        return
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET temp_directory = ''")  # no spilling: the memory limit is a bound
    folder = str(root.resolve()).rstrip("/") + "/"  # a prefix: "results/", not "results2"
    con.execute("SET allowed_directories = $d", {"d": [folder]})
    allowed = [*readable, *(str(p.resolve()) for p in writable)]
    con.execute("SET allowed_paths = $p", {"p": allowed})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


_EXPLAIN = re.compile(
    r"^\s*EXPLAIN\s+(?:ANALY[SZ]E\s+|\((?:[^()']|'[^']*')*\)\s*)?(?P<inner>.*)$",
    re.IGNORECASE | re.DOTALL,
)
"""``EXPLAIN``, ``EXPLAIN ANALYZE`` or ``EXPLAIN (options)`` and the statement it wraps."""


def only_reads(sql: str, how: Confinement) -> None:
    """Refuse ``sql`` unless each of its statements reads (:data:`READING`; anything goes when
    ``how.unsafe``). An ``EXPLAIN`` reads when the statement it wraps does (``EXPLAIN ANALYZE``
    runs it); ``PREPARE``/``EXECUTE`` are refused (what they run is not in the text), and so
    is a nested ``query()`` of anything but a ``SELECT`` (DuckDB's own rule).

    Raises:
        UserError: a statement that writes, attaches, sets or loads, named by its type.
    """
    if how.unsafe:
        return
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return  # a syntax error: running it says where, in DuckDB's words
    for statement in statements:
        _reads(statement.type, statement.query)


def _reads(kind: duckdb.StatementType, text: str) -> None:
    """Refuse one statement (of type ``kind``, text ``text``) unless it reads."""
    if kind == duckdb.StatementType.EXPLAIN:
        found = _EXPLAIN.match(text)
        try:
            inner = duckdb.extract_statements(found["inner"]) if found else []
        except duckdb.Error:
            inner = []
        if len(inner) != 1:
            raise UserError(
                f"harness query runs SELECT statements only: cannot tell what {text.strip()!r} "
                "explains (write EXPLAIN SELECT ...)"
            )
        _reads(inner[0].type, inner[0].query)
    elif kind not in READING:
        name = kind.name.replace("_STATEMENT", "")
        raise UserError(
            f"harness query runs SELECT statements only, not {name} (results are read, "
            f"never changed); --unsafe or {env.SQL_UNSAFE.name}=1 runs any DuckDB SQL"
        )


def only_predicate(where: str) -> None:
    """Refuse ``where`` (``--where``) unless it is one predicate that reads: SQL that, put in
    ``WHERE (...)``, makes one SELECT statement (no ``; COPY ...`` after a closing parenthesis).

    Raises:
        UserError: ``where`` holds a statement of its own.
    """
    try:
        statements = duckdb.extract_statements(f"SELECT 1 WHERE ({where})")
    except duckdb.Error:
        return  # a syntax error: running it says where, in DuckDB's words
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise UserError(f"--where {where!r}: expected one predicate over the columns of runs")


def interruptible(con: duckdb.DuckDBPyConnection, work: Callable[[], T]) -> T:
    """``work()`` (which queries ``con``) in a thread of its own; Ctrl-C interrupts the query.

    Raises:
        KeyboardInterrupt: Ctrl-C stopped it (the CLI says "interrupted", exit 130).
    """
    if threading.current_thread() is not threading.main_thread():
        return work()  # signals reach only the main thread: nothing to relay
    done: list[T] = []
    failed: list[BaseException] = []
    asked: list[int] = []

    def run() -> None:
        try:
            done.append(work())
        except BaseException as e:  # handed to the caller's thread below
            failed.append(e)

    def on_sigint(signum: int, frame: object) -> None:
        asked.append(signum)
        con.interrupt()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        worker = threading.Thread(target=run, name="harness-query", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.05)
    finally:
        signal.signal(signal.SIGINT, previous)
    if asked:
        raise KeyboardInterrupt
    if failed:
        raise failed[0]
    return done[0]


_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def memory_bytes(con: duckdb.DuckDBPyConnection) -> int | None:
    """``con``'s memory limit in bytes (None when DuckDB says it in a form not known here)."""
    rows = con.execute("SELECT current_setting('memory_limit')").fetchall()
    found = re.match(r"^\s*([\d.]+)\s*([A-Za-z]*)\s*$", str(rows[0][0]) if rows else "")
    if not found or found[2].lower() not in _UNITS:
        return None
    return int(float(found[1]) * _UNITS[found[2].lower()])
