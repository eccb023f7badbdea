"""The analysis layer: questions about a grid's results answered from SQL, and its figures.

Layout (library first, CLI thin):

- ``queries.py``: every SQL statement, by name.
- ``load.py``: the only module touching the database: grid, scale and ``--where`` resolution.
- ``gridref.py``: GRID arguments (a YAML path or a name) and a YAML's declared figures.
- ``values.py``, ``axes.py``, ``select.py``, ``goal.py``, ``cells.py``: turning rows into
  per-seed values of arms in cells (diverged = worst, K=V selectors, tuned vs condition columns,
  which direction of a metric is better).
- ``tuning.py``, ``edges.py``, ``gap.py``, ``crossover.py``, ``compare.py``, ``corrections.py``,
  ``speedup.py``, ``bootstrap.py``: pure statistics (DataFrame in, DataFrame out).
- ``commands.py``: what the commands share (the query, load, tune per cell, label arms).
- ``questions.py``: the registry of ``harness analyze`` questions (the CLI builds each command
  from its entry); each answered by one module: ``answers/<name>.py`` for the built-in ones
  (best, gap, compare, crossover, speedup, targets, profiles), ``<name>.py`` for the others.
- ``output.py``: tables, CSV and JSON.
- ``importing.py``: external results (CSV) as result rows; the repository's ``analysis/published/``
  holds some.
- ``figures/``: the figure registry and one module per figure, named after it.
- ``testing.py``: synthetic result rows for tests and examples.
"""
