"""Launchers: how planned runs reach a machine (``local`` here, ``slurm`` on a cluster)."""
