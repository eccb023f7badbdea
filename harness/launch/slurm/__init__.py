"""The SLURM backend: job arrays through submitit (``launcher``), the tasks they run (``task``,
``boot``), the scheduler's commands, limits and resources, submission records, reconciliation,
cancellation and the queue view."""
