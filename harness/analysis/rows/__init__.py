"""From the database to per-seed values of arms in cells: the analysis layer's one door to the
database (``load``, its SQL in ``queries``), GRID arguments (``gridref``), preparation of rows
into values (``preparation``: diverged runs worst, faults dropped), a metric's direction
(``direction``), the roles of columns (``axes``), ``K=V`` selectors and arms (``selectors``),
method labels of figures and profiles (``arm_labels``), the tuning protocol (``tuning``), open
edges of searched ranges (``edges``) and the notes that stop a misreading (``caveats``)."""
