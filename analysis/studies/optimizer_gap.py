"""Study: the optimizer gap at laptop scale (the talk's Table 1): gap closures of Signum,
RMSprop, SGD+Cclip, SignSGD and SGD+Gclip between SGD and Adam, with Fieller intervals and
Holm-corrected Welch tests, and the validation loss by token-frequency bucket (where does SGD
lose?). Each arm is tuned on seeds 0-2; ``--extend`` moves any best on an open edge of its lr or
weight-decay axis one step further (up to the grid's 3 rounds); ``--confirm`` then trains each
arm's selected configuration on fresh seeds 3-5, and the analysis reports those.

    python analysis/studies/optimizer_gap.py

Report: analysis/studies/optimizer_gap.md.
"""

from __future__ import annotations

from _study import RESULTS, Study

study = Study("optimizer_gap", "optimizer_gap", followup=("--extend", "--confirm"))
study.train()
gap = ("gap", "--baseline", "label=SGD", "--reference", "label=Adam")
study.analyze(*gap)  # confirmed on seeds 3-5 (the default once confirmation runs exist)
study.analyze(
    "compare",
    "--a",
    "label=SGD+Gclip",
    "--b",
    "label=SGD+Cclip",
    "--by",
    "model",
    "--alternative",
    "two-sided",
)
study.analyze("best", "--by", "label")
for q in (1, 2, 3, 4):  # at each arm's loss-best configuration (the default --select-by)
    study.analyze("best", "--by", "label", "--metric", f"val_loss_q{q}")
for q in (1, 4):  # frequent (q1) and rare (q4) tokens: is SGD's loss there different from Adam's?
    study.analyze(
        "compare",
        "--a",
        "label=Adam",
        "--b",
        "label=SGD",
        "--by",
        "model",
        "--metric",
        f"val_loss_q{q}",
        "--alternative",
        "two-sided",
    )
study.harness(
    "import",
    "analysis/published/talk_table1.csv",
    "--grid",
    "talk_table1",
    "--source",
    "Orvieto talk, Table 1",
    "--results",
    "results/studies",
)
study.harness(
    "analyze",
    "gap",
    "talk_table1",
    "--baseline",
    "label=SGD",
    "--reference",
    "label=Adam",
    "--results",
    "results/studies",
)
study.figure("gap_closure")
# the gap table on the tuning seeds alone (selected and tested on the same seeds), for contrast
tuning = f"({study.where()}) AND confirm IS NOT TRUE"
study.harness(
    "analyze",
    "gap",
    str(study.grid),
    *gap[1:],
    "--scale",
    "local",
    "--results",
    str(RESULTS),
    "--where",
    tuning,
)
study.finish()
