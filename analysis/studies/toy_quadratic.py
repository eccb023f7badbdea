"""Study: Adam vs SGD, Signum and SignSGD on a block-diagonal quadratic whose blocks have
heterogeneous or homogeneous spectra (Zhang et al. 2024, "Why Transformers need Adam: a Hessian
perspective", Sec. 3), on the harness's ``quadratic`` workload (``harness.workloads``). Each arm
is tuned over lr on seeds 0-2 (selected by the mean final loss); ``--confirm`` then trains each
arm's selected lr on fresh seeds 3-5, and the analysis reports those. The metric is log10 of the
suboptimality f(x) - f* after 300 exact gradient steps. Welch tests, Holm-corrected over the
cells, per spectrum.

    python analysis/studies/toy_quadratic.py

Grid: analysis/studies/toy_quadratic.yaml. Report: analysis/studies/toy_quadratic.md.
"""

from __future__ import annotations

from _study import STUDIES, Study

study = Study(
    "toy_quadratic",
    "toy_quadratic",
    followup=("--confirm",),
    grid_file=STUDIES / "toy_quadratic.yaml",
)
study.train()
metric = ("--metric", "log10_gap")
study.analyze("best", "--by", "spectrum,label", *metric)
for arm in ("Adam", "Signum", "SignSGD"):  # each against SGD, within each spectrum
    study.analyze(
        "compare",
        "--a",
        "label=SGD",
        "--b",
        f"label={arm}",
        "--by",
        "spectrum",
        *metric,
        "--alternative",
        "two-sided",
    )
study.analyze(
    "compare",
    "--a",
    "spectrum=heterogeneous",
    "--b",
    "spectrum=homogeneous",
    "--by",
    "label",
    *metric,
    "--alternative",
    "two-sided",
)  # each arm: does the spectrum matter?
study.analyze(
    "gap", "--baseline", "label=SGD", "--reference", "label=Adam", "--by", "spectrum", *metric
)
study.figure("lr_sensitivity", *metric)
study.finish()
