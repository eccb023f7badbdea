"""Showing answers: tables, CSV and JSON (``table``), figures (``figures/``, one module per figure)
and the self-contained HTML report (``report/``)."""
