"""Study: Adam vs SGD over batch sizes at laptop scale, lr (and Adam's beta2, SGD's weight
decay) tuned at every batch size: is there a crossover, does the gap shrink with the batch, how
do the steps to a target loss scale (critical batch size), where is each fitted optimum lr? And
the validation loss of the rarest token-frequency bucket through training, SGD vs Adam at a
small and a large batch (the talk: rare tokens are hard for SGD "only at big batch").

It trains the study grid next to it, ``analysis/studies/batch_size_gap.yaml`` (the shipped
``grids/batch_size_gap.yaml`` keeps its pinned plan): tuned on seed 0, ``--extend`` moves a best lr
on an open edge one step further (one round), ``--confirm`` trains each cell's selected
configuration on fresh seeds 1-3, and the analysis reports those.

    python analysis/studies/batch_size_gap.py

Report: analysis/studies/batch_size_gap.md.
"""

from __future__ import annotations

import numpy as np
from _study import RESULTS, STUDIES, Study
from scipy import stats

from harness.analysis.stats import linear_interval, satterthwaite

SMALL, LARGE = 4, 64
"""The batch sizes the gap trend and the rare-token figure contrast."""

study = Study(
    "batch_size_gap",
    "batch_size_gap",
    followup=("--extend", "--confirm"),
    grid_file=STUDIES / "batch_size_gap.yaml",
)
study.train()
sgd_adam = ("--a", "optimizer=sgd", "--b", "optimizer=adamw")
study.analyze("best", "--by", "optimizer,batch_size")  # confirmed on seeds 1-3
study.analyze("compare", *sgd_adam, "--by", "batch_size", "--alternative", "two-sided")
study.analyze(
    "compare", *sgd_adam, "--by", "batch_size", "--alternative", "two-sided", "--metric", "val_loss"
)
study.analyze("crossover", "--x", "batch_size", *sgd_adam)
for q in (1, 4):  # frequent (q1) and rarest (q4) tokens, at each cell's loss-selected config
    study.analyze(
        "compare",
        *sgd_adam,
        "--by",
        "batch_size",
        "--alternative",
        "two-sided",
        "--metric",
        f"val_loss_q{q}",
    )
study.analyze("optimum", "--axis", "lr", "--by", "batch_size")
study.analyze("critical-batch")  # default target: the highest training loss every run reaches
study.analyze("critical-batch", "--target", "6.5")  # a target Adam reaches at every batch size
# the tuning seed alone (selected and measured on the same seed), for contrast
study.harness(
    "analyze",
    "best",
    str(study.grid),
    "--by",
    "optimizer,batch_size",
    "--scale",
    "local",
    "--results",
    str(RESULTS),
    "--where",
    f"({study.where()}) AND confirm IS NOT TRUE",
)


def gap_trend() -> None:
    """Does the SGD - Adam gap (validation loss, nats, confirmation seeds) differ between the
    largest and the smallest batch? The contrast (d(LARGE) - d(SMALL)), d = SGD - Adam, of four
    independent means: Welch-Satterthwaite t interval and two-sided t test."""
    sql = (
        f"SELECT optimizer, batch_size, val_loss FROM runs WHERE ({study.where()}) "
        f"AND confirm AND batch_size IN ({SMALL}, {LARGE})"
    )
    vals: dict[tuple[str, int], list[float]] = {}
    for row in study.frame(sql).itertuples(index=False):
        vals.setdefault((str(row.optimizer), int(row.batch_size)), []).append(float(row.val_loss))
    arms = [
        ("sgd", LARGE, 1.0),
        ("adamw", LARGE, -1.0),
        ("sgd", SMALL, -1.0),
        ("adamw", SMALL, 1.0),
    ]
    xs = [np.asarray(vals.get((o, b), []), float) for o, b, _ in arms]
    if min(x.size for x in xs) < 2:
        study.note("\n# gap trend: fewer than 2 confirmation seeds in some arm: no test")
        return
    est = sum(c * x.mean() for (_, _, c), x in zip(arms, xs, strict=True))
    weights = [x.var(ddof=1) / x.size for x in xs]
    dfs = [x.size - 1.0 for x in xs]
    lo, hi = linear_interval(est, weights, dfs, 0.95)
    df = float(satterthwaite(weights, dfs))
    t = est / np.sqrt(sum(weights))
    p = 2 * stats.t.sf(abs(t), df)
    study.note(
        f"\n# gap trend (confirmation seeds): [SGD - AdamW](B={LARGE}) - [SGD - AdamW](B={SMALL}) "
        f"in val_loss = {est:.4f} nats, 95% Welch-Satterthwaite t interval [{float(lo):.4f}, "
        f"{float(hi):.4f}], t = {t:.2f}, df = {df:.1f}, two-sided p = {p:.2g}; as a ratio of "
        f"the SGD/AdamW perplexity ratios: {np.exp(est):.3f} [{np.exp(float(lo)):.3f}, "
        f"{np.exp(float(hi)):.3f}]; n = {', '.join(str(x.size) for x in xs)}"
    )


gap_trend()
study.figure("batch_size")
study.figure("steps_to_target", suffix="-steps")
# the rarest bucket through training, SGD vs AdamW at the smallest and largest batch: each arm's
# confirmed configuration on its confirmation seeds (mean and 2-sigma band over seeds 1-3; the
# figure selects on the tuning run and draws the confirmation runs, as analyze best)
rare = f"({study.where()}) AND batch_size IN ({SMALL}, {LARGE})"
study.harness(
    "figures",
    str(study.grid),
    "--figure",
    "metric_vs_tokens",
    "--metric",
    "val_loss_q4",
    "--scale",
    "local",
    "--results",
    str(RESULTS),
    "--where",
    rare,
)
folder = RESULTS / study.grid_name / "figures"
study.save_png(folder / "metric_vs_tokens-val_loss_q4-local.png", "-rare")
study.query(
    "SELECT c.tokens, r.optimizer, r.batch_size, count(*) AS n, round(avg(c.val_loss_q4), 3) "
    "AS q4_mean, round(stddev_samp(c.val_loss_q4), 3) AS q4_std, round(avg(c.val_loss_q1), 3) "
    "AS q1_mean, round(stddev_samp(c.val_loss_q1), 3) AS q1_std FROM curves c JOIN runs r "
    f"ON c.run_id = r.run_id WHERE r.run_id IN (SELECT run_id FROM runs WHERE {rare} AND confirm) "
    "AND c.val_loss_q4 IS NOT NULL GROUP BY ALL ORDER BY r.batch_size, c.tokens, r.optimizer"
)
study.finish()
