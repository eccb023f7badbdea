"""The in-process backend (``kind: inprocess``): runs trained one after another inside the
process that submits them, for tests and debugging where the run process is not what is looked
at (as submitit's ``DebugExecutor``)."""
