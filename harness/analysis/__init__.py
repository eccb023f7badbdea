"""The analysis layer: questions about a grid's results answered from SQL, and its figures.

Four folders, each importing only those below it (``lint-imports`` keeps it so):

- ``present/``: tables, CSV and JSON (``table``), ``figures/`` (the registry and one module per
  figure, named after it) and ``report/`` (the self-contained HTML report).
- ``questions/``: the registry of ``harness analyze`` questions (``registry``; the CLI builds each
  command from its entry) and one module per question, each with ``answer(...) -> Answer``.
- ``rows/``: the one door to the database (``load``, its SQL in ``queries``) and everything that
  turns rows into per-seed values of arms in cells (GRID arguments, preparation, direction of a
  metric, roles of columns, selectors and arms, tuning per cell, open edges, caveats).
- ``stats/``: numbers in, numbers out; the facade :mod:`harness.analysis.stats` exports the public
  names.

``testing.py``: synthetic result rows for tests and examples.
"""
