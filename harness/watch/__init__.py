"""``harness watch``: the live terminal view of grids being trained (``live_view``)."""
