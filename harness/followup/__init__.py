"""Runs planned from results: values beyond open edges (``submit --extend``) and selected
configurations on fresh seeds (``submit --confirm``), in ``planning``."""
