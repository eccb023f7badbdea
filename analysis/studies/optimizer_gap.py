"""Study: the optimizer gap at laptop scale (the talk's Table 1): gap closures of Signum,
RMSprop, SGD+Cclip, SignSGD and SGD+Gclip between SGD and Adam, with bootstrap intervals over
seeds, and the validation loss by token-frequency bucket (where does SGD lose?).

    python analysis/studies/optimizer_gap.py

Report: analysis/studies/optimizer_gap.md.
"""

from __future__ import annotations

from _study import Study

study = Study("optimizer_gap", "optimizer_gap")
study.train()
study.analyze("gap", "--baseline", "label=SGD", "--reference", "label=Adam")
study.analyze("best", "--by", "label")
for q in (1, 2, 3, 4):  # at each arm's loss-best configuration (the default --select-by)
    study.analyze("best", "--by", "label", "--metric", f"val_loss_q{q}")
study.harness("import", "analysis/published/talk_table1.csv", "--grid", "talk_table1",
              "--source", "Orvieto talk, Table 1", "--results", "results/studies")  # fmt: skip
study.harness("analyze", "gap", "talk_table1", "--baseline", "label=SGD", "--reference",
              "label=Adam", "--results", "results/studies")  # fmt: skip
study.figure("gap_closure")
study.finish()
