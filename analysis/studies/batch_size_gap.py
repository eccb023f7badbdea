"""Study: Adam vs SGD over batch sizes at laptop scale, lr (and Adam's beta2, SGD's weight
decay) tuned at every batch size: is there a crossover, and where? And the validation loss by
token-frequency bucket per batch size (the talk: rare tokens are hard for SGD "only at big
batch").

    python analysis/studies/batch_size_gap.py

Report: analysis/studies/batch_size_gap.md.
"""

from __future__ import annotations

from _study import Study

study = Study("batch_size_gap", "batch_size_gap")
study.train()
study.analyze("best", "--by", "optimizer,batch_size")
study.analyze("crossover", "--x", "batch_size", "--a", "optimizer=sgd", "--b", "optimizer=adamw")
for q in (1, 4):
    study.analyze("best", "--by", "optimizer,batch_size", "--metric", f"val_loss_q{q}")
study.figure("batch_size")
study.finish()
