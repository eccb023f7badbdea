"""Downstream evaluation of a run's final weights with EleutherAI's lm-evaluation-harness
(the optional extra ``eval``): the harness's model and tokenizer as an lm-eval ``LM`` (``lm``),
the tasks lm-eval knows (``tasks``) and one run evaluated on some of them (``evaluate``). Knows
nothing of launchers, the store or the CLI: it returns :class:`harness.core.scores.Score`
values."""
