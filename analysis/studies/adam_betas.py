"""Study: Adam's beta1 x beta2 at laptop scale (the talk's "2x the tokens" table).

    python analysis/studies/adam_betas.py

Report: analysis/studies/adam_betas.md.
"""

from __future__ import annotations

from _study import Study

study = Study("adam_betas", "adam_betas")
study.train()
study.analyze("best", "--by", "beta1,beta2")
study.query(
    "SELECT beta1, beta2, status, round(val_ppl, 1) AS val_ppl, "
    "round(max_loss_rise, 2) AS max_loss_rise, round(train_loss, 3) AS train_loss "
    "FROM runs WHERE grid = 'adam_betas' AND scale = 'local' AND steps = 480 "
    "ORDER BY beta1, beta2"
)
study.figure("beta_heatmap")
study.finish()
