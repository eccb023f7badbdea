"""``harness analyze`` questions: the registry (``registry``) and one module per question, each
with ``answer(q, ...) -> Answer``; what the questions share (``query``: the tuned rows of a
``Query``; ``target_query``: the runs of a ``TargetQuery`` and their times to a target)."""
