"""One module per built-in ``harness analyze`` question, each with ``answer``; their
:class:`~harness.analysis.questions.Question` entries are in ``harness/analysis/questions.py``."""
