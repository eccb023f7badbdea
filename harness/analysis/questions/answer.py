"""What a question answers: a table and the notes a reader must see with it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True, slots=True)
class Answer:
    """What a command found: a table and the notes a reader must see with it."""

    table: pd.DataFrame
    """The result, one row per cell (or per cell and arm)."""
    notes: list[str] = field(default_factory=list)
    """Diverged runs, dropped rows, edges, anything that qualifies the table."""
