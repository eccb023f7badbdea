"""The result store: Parquet rows and loss curves (``rows``, ``schema``), the manifest of planned
runs, DuckDB views over them (``db``), compaction and a grid's status. Imports nothing of the
launchers or the training loop."""
