"""Study: the loss of each class-frequency group under gradient descent, Adam and sign descent on
a linear softmax classifier with Zipf-distributed classes (Kunstner et al. 2024, "Heavy-tailed
class imbalance and why Adam outperforms gradient descent on language models"), on the harness's
``imbalance`` workload (``harness.workloads``). Each arm is tuned over lr on seeds 0-2 (by the
overall loss); ``--confirm`` then trains its selected lr on fresh seeds 3-5, and the arms are
compared group by group on those: Welch tests, Holm-corrected over the cells.

    python analysis/studies/toy_imbalance.py

Grid: analysis/studies/toy_imbalance.yaml. Report: analysis/studies/toy_imbalance.md.
"""

from __future__ import annotations

from _study import STUDIES, Study

study = Study(
    "toy_imbalance",
    "toy_imbalance",
    followup=("--confirm",),
    grid_file=STUDIES / "toy_imbalance.yaml",
)
study.train()
study.analyze("best", "--by", "label", "--metric", "val_loss")
for q in (1, 2, 3, 4):  # each group, at each arm's configuration selected by the overall loss
    study.analyze("best", "--by", "label", "--metric", f"val_loss_q{q}", "--select-by", "val_loss")
for arm in ("Adam", "SignSGD"):
    for q in (1, 4):  # the most frequent and the rarest quarter of the examples
        study.analyze(
            "compare",
            "--a",
            "label=GD",
            "--b",
            f"label={arm}",
            "--by",
            "workload",
            "--metric",
            f"val_loss_q{q}",
            "--select-by",
            "val_loss",
            "--alternative",
            "two-sided",
        )
study.figure("metric_vs_tokens", "--metric", "val_loss_q4", "--select-by", "val_loss", suffix="-q4")
study.figure("metric_vs_tokens", "--metric", "val_loss_q1", "--select-by", "val_loss", suffix="-q1")
study.finish()
