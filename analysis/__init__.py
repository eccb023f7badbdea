"""The analysis layer: questions about a grid's results answered from SQL, and its figures.

Layout (library first, CLI thin):

- ``queries.py``: every SQL statement, by name.
- ``load.py``: the only module touching the database: grid, scale and ``--where`` resolution.
- ``values.py``, ``axes.py``, ``select.py``, ``metrics.py``: turning rows into per-seed values.
- ``tuning.py``, ``gap.py``, ``crossover.py``, ``compare.py``, ``corrections.py``,
  ``speedup.py``, ``bootstrap.py``: pure statistics (DataFrame in, DataFrame out).
- ``commands.py``: one function per ``harness analyze`` command (load, then statistics).
- ``importing.py``: external results (CSV) as result rows.
- ``figures/``: the figure registry and one module per figure kind.
"""
