"""Every SQL statement of the analysis layer, by name.

Statements read the views of :func:`harness.store.db.connect` (``runs``, ``curves``). ``{scale}`` is
filled with a quoted scale literal and ``{where}`` with the user's ``--where`` predicate (``true``
when none); :func:`render` does both, and the rendered text is what figure sidecars record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Scales present in a grid's results, with their run counts.
SCALES_PRESENT = "SELECT scale, count(*) AS runs FROM runs GROUP BY scale ORDER BY scale"

#: Column names and types of the runs view.
COLUMNS = "SELECT * FROM runs LIMIT 0"

#: Checks a --where predicate: the number of rows it keeps at the chosen scale.
COUNT = "SELECT count(*) FROM runs WHERE scale = {scale} AND ({where})"

#: Every run row of the selection (all statuses; the analysis decides what counts).
RUNS = "SELECT * FROM runs WHERE scale = {scale} AND ({where}) ORDER BY run_id"

#: Loss-curve points of the selected runs: run_id, step, tokens, train_loss, lr, val_loss,
#: elapsed_s, then the tracked metrics' columns of any curve that has them (NULL elsewhere).
CURVES = (
    "SELECT c.* EXCLUDE (grid) "
    "FROM curves AS c "
    "WHERE c.run_id IN (SELECT run_id FROM runs WHERE scale = {scale} AND ({where})) "
    "ORDER BY c.run_id, c.step"
)

#: :data:`CURVES` of some runs only: their run_ids are the statement's one parameter (a list).
CURVES_OF = (
    "SELECT c.* EXCLUDE (grid) "
    "FROM curves AS c "
    "WHERE c.run_id IN (SELECT unnest($1::VARCHAR[])) "
    "AND c.run_id IN (SELECT run_id FROM runs WHERE scale = {scale} AND ({where})) "
    "ORDER BY c.run_id, c.step"
)

#: The number of rows of :data:`CURVES`, without its order or columns (``count(*)`` over the
#: statement itself sorts the 20 million points of 100,000 runs: 2 s of CPU and a gigabyte).
CURVES_COUNT = (
    "SELECT count(*) FROM curves AS c "
    "WHERE c.run_id IN (SELECT run_id FROM runs WHERE scale = {scale} AND ({where}))"
)

#: Planned runs of the selection's scale (the manifest: every run of the grid, run or not).
MANIFEST = "SELECT * FROM manifest WHERE scale = {scale} ORDER BY run_id"

#: Planned runs of the selection (manifest rows the predicate keeps) and how many of them have
#: no completed or diverged row: ``(planned, missing)``.
PLAN_MISSING = (
    "SELECT count(*), count(*) FILTER (WHERE run_id NOT IN (SELECT run_id FROM runs WHERE "
    "status IN ('completed', 'diverged'))) FROM manifest WHERE scale = {scale} AND ({where})"
)

#: ``harness watch``: wall seconds of the rows so far, and whether any ran on a GPU.
PROGRESS_USED = (
    "SELECT coalesce(sum(wall_s), 0), coalesce(bool_or(device LIKE 'cuda%'), false) FROM runs"
)

#: ``harness watch``: elapsed seconds of the runs training now (their live curves).
PROGRESS_RUNNING = (
    "SELECT coalesce(sum(s), 0) FROM (SELECT max(elapsed_s) AS s FROM curves WHERE running "
    "GROUP BY run_id)"
)

#: ``harness watch``: the best completed run per optimizer, with the lrs its manifest searches.
PROGRESS_BEST = (
    "SELECT r.optimizer, r.run_id, r.lr, r.val_loss, s.lrs FROM runs r JOIN (SELECT "
    "optimizer, list(DISTINCT lr) AS lrs FROM manifest GROUP BY optimizer) s USING "
    "(optimizer) WHERE r.status = 'completed' AND isfinite(r.val_loss) QUALIFY "
    "row_number() OVER (PARTITION BY r.optimizer ORDER BY r.val_loss) = 1 ORDER BY r.val_loss"
)

#: ``harness watch``: training losses in step order of the ``{limit}`` runs lowest at their
#: last point.
PROGRESS_LEADERS = (
    "SELECT run_id, list(train_loss ORDER BY step) FROM curves WHERE train_loss IS NOT NULL "
    "GROUP BY run_id ORDER BY arg_max(train_loss, step) LIMIT {limit}"
)

#: Named statements a figure may declare.
NAMED: dict[str, str] = {"runs": RUNS, "curves": CURVES, "manifest": MANIFEST}

#: A statement counting the rows of a named one cheaply, where the generic count is not.
COUNTS: dict[str, str] = {"curves": CURVES_COUNT}


def project(sql: str, columns: Sequence[str]) -> str:
    """``sql`` (a statement of every column, ``SELECT * ...``) of ``columns`` only, in that
    order."""
    assert sql.startswith("SELECT * "), sql
    names = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    return f"SELECT {names} {sql.removeprefix('SELECT * ')}"


_KEY = re.compile(r"(?:\w+\.)?(\w+)")
"""A sort key of :func:`split_order`: a plain column, maybe qualified (``c.run_id``)."""


def split_order(sql: str) -> tuple[str, list[str]]:
    """``sql`` without its final ``ORDER BY`` when that orders by plain columns ascending
    (``ORDER BY c.run_id, c.step``), and those columns' names; else ``sql`` as it is and no
    column. The caller sorts the rows by them (DuckDB's sort carries every column of every row
    with its keys: 0.4 s of CPU for the rows of 100,000 runs x 80 columns; sorting the keys and
    taking the rows in that order costs a quarter of that)."""
    body, found, order = sql.rpartition(" ORDER BY ")
    keys = [_KEY.fullmatch(k.strip()) for k in order.split(",")]
    if not found or not all(keys):
        return sql, []
    return body, [k.group(1) for k in keys if k]


def render(sql: str, scale: str, where: str | None) -> str:
    """``sql`` with the scale and predicate filled in."""
    assert scale in ("full", "local"), scale
    return sql.format(
        scale=f"'{scale}'", where=where.strip() if where and where.strip() else "true"
    )
