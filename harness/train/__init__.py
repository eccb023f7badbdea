"""The training loop (``loop``: ``train(run) -> RunResult``), its checkpoints and device
placement. Knows nothing of launchers, SLURM, Parquet or the CLI."""
