"""Runs planned from results: values beyond open edges (``submit --extend``) and selected
configurations on fresh seeds (``submit --confirm``), in ``planning``; each cell's selection as
they make it, in ``selected``; the rounds of a submit, in ``rounds``."""
