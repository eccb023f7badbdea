"""Launching: ``submit`` (grid -> manifest -> backend), the backend contract, launcher profiles,
and the backends (``local``, ``slurm``) with the worker side that runs inside their jobs."""
