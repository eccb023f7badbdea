"""The column names an imported CSV may use besides the harness's own: Weights & Biases export
names (``Name``, ``State``, ``Step``/``_step``, ``train/loss``, ...), read as the harness's, and
the user's own (``harness import --map NAME=column``).

A *run name* column (``Name``, ``name``, ``run_name``) names each run without being its arm: it
tells runs apart (their run_id) and matches curve points to runs, but is no ``label`` (W&B's
``Group``, the seeds of one configuration, is).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from harness.core.errors import UserError

#: The harness's name of a run-name column.
RUN_NAME = "run_name"
#: File column -> harness column, as W&B exports name them (runs and histories).
ALIASES: dict[str, str] = {
    "Name": RUN_NAME,
    "name": RUN_NAME,
    "State": "status",
    "Group": "label",  # W&B groups the seeds of one configuration: the arm
    "Step": "step",
    "_step": "step",
    "train/loss": "train_loss",
    "val/loss": "val_loss",
    "eval/loss": "val_loss",
    "train/lr": "lr",
    "_runtime": "elapsed_s",
}
#: W&B export columns that carry nothing an analysis reads: dropped.
IGNORED = (
    "Notes",
    "User",
    "Tags",
    "Created",
    "Sweep",
    "Runtime",
    "ID",
    "Job Type",
    "Hostname",
    "_timestamp",
    "_wandb",
)
#: W&B run states -> statuses (``running`` has none: the run has no result yet).
STATES: dict[str, str] = {"finished": "completed", "crashed": "failed", "killed": "cancelled"}


def rename(frame: pd.DataFrame, mapping: Mapping[str, str], file: str) -> pd.DataFrame:
    """``frame`` with the ``mapping`` (``--map``) and :data:`ALIASES` applied, the
    :data:`IGNORED` columns dropped and W&B states read as statuses.

    Raises:
        UserError: two columns read as the same name.
    """
    frame = frame.drop(columns=[c for c in frame.columns if c in IGNORED and c not in mapping])
    names = {c: mapping.get(c) or ALIASES.get(c, c) for c in frame.columns}
    seen: dict[str, str] = {}
    for column, name in names.items():
        if name in seen:
            raise UserError(
                f"{file}: columns {seen[name]!r} and {column!r} are both read as {name!r}; "
                "drop one, or name one with --map"
            )
        seen[name] = column
    out = frame.rename(columns=names)
    if "status" in out.columns:
        out["status"] = out["status"].map(lambda v: STATES.get(str(v).strip(), v))
    return out
