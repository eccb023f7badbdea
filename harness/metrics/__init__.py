"""Metrics: the catalogue of every measured column (``catalogue``, torch-free), the paper's
embedding metrics (``embedding``) and what a trained run's row gets from them (``final``)."""
