"""Study: Adam's beta1 x beta2 at laptop scale (the talk's "2x the tokens" table).

    python analysis/studies/adam_betas.py

Trains ``grids/adam_betas.yaml --local`` (24 cells, seed 0), then the study grid
``adam_betas_seeds.yaml`` (seeds 1 and 2 of 10 of those cells), and tests each claim of the
report with an interval or a Welch test on ``val_loss`` (nats: a mean of perplexities of 1e70 says
nothing). Report: analysis/studies/adam_betas.md.
"""

from __future__ import annotations

from _study import Study

study = Study("adam_betas", "adam_betas", also=("adam_betas_seeds.yaml",))
study.train()
study.query(
    "SELECT beta1, beta2, seed, status, round(val_ppl, 1) AS val_ppl, "
    "round(val_loss, 3) AS val_loss, round(max_loss_rise, 2) AS max_loss_rise "
    f"FROM runs WHERE {study.where()} ORDER BY beta1, beta2, seed"
)
# each cell: mean val_loss over its seeds with its t interval (one seed: none)
study.analyze("best", "--by", "beta1,beta2", "--metric", "val_loss")
# the best of the whole beta grid, and whether it sits on the grid's edge
study.analyze("best", "--over", "beta1,beta2", "--metric", "val_loss")

WORSE = ("--metric", "val_loss", "--alternative", "greater")  # H1: b's loss is higher than a's
TWO_SIDED = ("--metric", "val_loss", "--alternative", "two-sided")
CELL = "beta1={},beta2={}"
# the blow-up corner (and (0.95, 0.8)) against the diagonal cell of the same beta1
for b1, b2 in ((0.975, 0.8), (0.9875, 0.8), (0.9875, 0.9), (0.95, 0.8)):
    study.analyze("compare", "--a", CELL.format(b1, b1), "--b", CELL.format(b1, b2), *WORSE)
# the diagonal against its first cell (0.9, 0.9)
for b in (0.95, 0.975, 0.9875):
    study.analyze("compare", "--a", CELL.format(0.9, 0.9), "--b", CELL.format(b, b), *WORSE)
# the first row: the two seed-0 winners (this machine's, the committed run's) against beta2 = beta1
for b2 in (0.95, 0.99375):
    study.analyze("compare", "--a", CELL.format(0.9, 0.9), "--b", CELL.format(0.9, b2), *TWO_SIDED)
study.figure("beta_heatmap", "--metric", "val_loss")
study.finish()
