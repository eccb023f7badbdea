"""The verdict as text: a terminal table (the default) or JSON (for programs)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from harness.bench.derive import Derived
from harness.bench.phases import Plan
from harness.bench.verdict import Comparison, Verdict

FORMATS = ("table", "json")
"""Values of ``harness bench --format``."""


def _cell(cell: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in cell.items())


def _num(x: float, fmt: str = ".4g") -> str:
    return "-" if not math.isfinite(x) else format(x, fmt)


def _signed(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:+.3g}"


def _stage(v: Verdict, c: Comparison) -> str:
    """Where a tested comparison's sequential confirmation stopped and its runs."""
    if len(v.stages) < 2 or not math.isfinite(c.p) or c.reading == "pending":
        return ""
    return f" (stage {c.stage + 1} of {len(v.stages)}, {c.n_candidate + c.n_baseline} runs)"


def _stages(v: Verdict) -> list[str]:
    """The sequential confirmation's line: its stages, their alpha, what they cost."""
    if len(v.stages) < 2:
        return []
    tested = [c for c in v.comparisons if math.isfinite(c.p) and c.reading != "pending"]
    stopped = [sum(c.stage == k for c in tested) for k in range(len(v.stages))]
    runs = sum(c.n_candidate + c.n_baseline for c in tested)
    spent = ", ".join(f"{w:.0%}" for w in v.spent)
    return [
        f"sequential confirmation: {', then '.join(map(str, v.stages))} seeds per arm where a "
        f"comparison is still inconclusive (alpha spent {spent} by stage; Holm over the "
        f"stage-combined p-values, so the family-wise error holds over the stages); stopped at "
        f"each stage: {' / '.join(map(str, stopped))}; {runs} confirmation runs in the tested "
        f"comparisons (at most {len(tested) * 2 * v.stages[-1]})"
    ]


def verdict_table(v: Verdict, caveats: Sequence[str] = ()) -> str:
    """The verdict for a terminal (module docstring of :mod:`harness.bench.verdict`), with the
    search space's ``caveats`` (:attr:`harness.bench.space.Arm.caveats`) before its last line."""
    tests = sum(1 for c in v.comparisons if math.isfinite(c.p))
    methods = {c.method for c in v.comparisons if math.isfinite(c.p)}
    method = _methods(methods)
    lines = [
        f"{v.grid}: {v.candidate} against {', '.join(v.baselines)} ({v.protocol})",
        f"{v.metric} at the end of each run's full decay; mean over confirmation seeds "
        f"{_seeds(v.confirm_seeds)} (selected on {_seeds(v.tune_seeds)}); difference = "
        f"candidate - baseline, {method}; Holm over {tests} test(s), alpha {v.alpha:g}; "
        "each interval at the level of its reading (the Holm step's 1 - alpha/(m - r + 1)), "
        "so it excludes 0 exactly where the verdict is better or worse",
        "",
    ]
    head = (
        "cell",
        "baseline",
        "candidate mean",
        "baseline mean",
        "difference",
        "CI (level)",
        "p (Holm)",
        "verdict",
    )
    body = []
    for c in v.comparisons:
        ci = (
            f"[{_signed(c.ci_low)}, {_signed(c.ci_high)}] {c.confidence:.1%}"
            if math.isfinite(c.ci_low)
            else "-"
        )
        cand = f"{_num(c.mean_candidate)} (n={c.n_candidate})" if c.n_candidate else "-"
        base = f"{_num(c.mean_baseline)} (n={c.n_baseline})" if c.n_baseline else "-"
        reading = c.reading + (f": {c.why}" if c.why else "") + _stage(v, c)
        body.append(
            (
                _cell(c.cell),
                c.baseline,
                cand,
                base,
                _signed(c.difference),
                ci,
                _num(c.p_adjusted, ".3g"),
                reading,
            )
        )
    lines += _columns(head, body)
    lines += _stages(v)
    power = [c for c in v.comparisons if math.isfinite(c.detectable)]
    if power:
        n = sorted({min(c.n_candidate, c.n_baseline) for c in power if c.stage == 0}) or [
            len(v.confirm_seeds)
        ]
        est, lo, hi = v.power_line
        lines.append(
            f"power: with {'/'.join(map(str, n))} seeds per arm a true difference of "
            f"{_num(est, '.3g')} ({_num(lo, '.3g')} to {_num(hi, '.3g')}: the 90% range of "
            f"the variance pooled over the {len(power)} tested cell(s), paired: of the "
            f"per-seed differences) is read {v.power:.0%} of the time at alpha "
            f"{v.alpha:g}/{tests}; smaller true differences read 'no evidence'"
        )
    if v.speedups:
        lines += [
            "",
            "data-efficiency speed-up (tokens the baseline needs for the candidate's "
            "final loss / tokens the candidate used; L(D) = E + A D^-alpha fit):",
        ]
        for s in v.speedups:
            lines.append(
                f"  {_cell(s.cell) or 'all'} vs {s.baseline}: {_num(s.ratio, '.3g')}x "
                f"[{_num(s.ci_low, '.3g')}, {_num(s.ci_high, '.3g')}] {s.reading}"
                + (f": {s.why}" if s.why else "")
                + (f" ({s.note})" if s.note else "")
                + (f"; model check: {s.fit_check}" if s.fit_check else "")
            )
    lines += [
        "",
        "lr sensitivity (mean tuning loss along the lr line through each arm's best; "
        "* the selected lr):",
    ]
    for a in v.arms:
        pts = " | ".join(
            f"{lr:.3g}: {'diverged' if math.isinf(m) else _num(m, '.4g')}"
            f"{'*' if lr == a.best.get('lr') else ''}"
            for lr, m in a.lr_curve
        )
        edge = f" (best on the {a.lr_edge} edge)" if a.lr_edge else ""
        lines.append(f"  {a.label:<20} {_cell(a.cell)}: {pts}{edge}")
    lines += ["", "compute per arm (the same budget for every arm, by construction):"]
    for t in v.totals:
        lines.append(
            f"  {t.label:<20} {t.budget} configurations per cell; {t.runs} runs "
            f"({t.extension_runs} from edge extension), {t.tokens:.3g} tokens"
        )
    lines += [
        f"seeds: tuned on {_seeds(v.tune_seeds)}; confirmed on {_seeds(v.confirm_seeds)}",
        "not tested: " + "; ".join(v.untested),
        *(f"caveat: {c}" for c in caveats),
        f"verdict: {v.summary}",
    ]
    return "\n".join(lines)


def _methods(methods: set[str]) -> str:
    """How the comparisons were tested, in words."""
    parts = []
    if "paired by seed" in methods:
        parts.append(
            "paired by seed (both arms ran the same seeds: the t test of the per-seed differences)"
        )
    if methods & {"welch", "banerjee"}:
        unequal = " (Banerjee's where the seed counts differ)" if "banerjee" in methods else ""
        parts.append(f"Welch's test where the seeds differ{unequal}")
    if any(m.startswith("fisher") for m in methods):
        parts.append("diverged seeds by Fisher's exact test in the same family")
    return "; ".join(parts) or "no test yet"


def _seeds(seeds: tuple[int, ...]) -> str:
    return ", ".join(map(str, seeds))


def _columns(head: tuple[str, ...], body: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head).rstrip(), *(fmt.format(*r).rstrip() for r in body)]


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    return x


def verdict_json(v: Verdict, caveats: Sequence[str] = ()) -> str:
    """The verdict as JSON (NaN as null), with the search space's ``caveats``."""
    extra = {"summary": v.summary, "caveats": list(caveats)}
    return json.dumps(_jsonable(dataclasses.asdict(v)) | extra, indent=2)


def plan_text(p: Plan, derived: Derived) -> str:
    """The dry run: each arm's search space and where each range came from, what each phase
    does, what earlier benches already ran, the compute."""
    lines = [
        f"{p.grid}: bench of {derived.candidate.label} (grid file {p.grid_path})",
        *space_lines(derived),
        f"budget per arm and cell: {p.configs} configurations x {p.tune_seeds} tuning seed(s), "
        f"up to {p.extend_rounds} rounds of lr extension, then {p.confirm_seeds} confirmation "
        f"seeds; {p.cells} cells",
        "phase 1, tune: every configuration on the tuning seeds",
    ]
    for a in p.arms:
        role = "candidate" if a.candidate else "baseline"
        shared = (
            f"; {a.tuning_done} already have a result (reused, not trained again)"
            if a.tuning_done
            else ""
        )
        lines.append(f"  {a.label} ({role}): {a.tuning} runs{shared}")
    lines += [
        f"phase 2, extend: at most {p.extension_max} runs (one lr step beyond an edge best, per "
        "arm, cell, round and tuning seed)",
        f"phase 3, confirm: {p.confirmation} runs (each arm's selected configuration per cell on "
        "each confirmation seed)",
        *(
            [
                f"phase 4, sequential confirmation: at most {p.stages_max} runs (more seeds, up "
                f"to {p.confirm_cap} per arm, only where a comparison is still inconclusive)"
            ]
            if p.stages_max
            else []
        ),
    ]
    reused = sum(a.followups_done for a in p.arms)
    if reused:
        lines.append(
            f"  {reused} extension and confirmation runs of earlier benches have a result (reused)"
        )
    cores = os.cpu_count() or 1
    cpu_h = p.cpu_hours_to_train
    lines += [
        f"at most {p.total_max} runs, {p.to_train_max} still to train; at most "
        f"{p.flops:.3g} FLOPs (6 x params x tokens)",
        f"locally: about {cpu_h:.2g} CPU-hours for the runs still to train (an estimate from "
        f"per-run CPU cost measured on the tiny GPT), about {cpu_h * 60 / cores:.0f} min of "
        f"wall on {cores} idle cores; on a cluster: {p.gpu_hours:,.2f} GPU-hours on {p.device}",
    ]
    return "\n".join(lines)


def space_lines(derived: Derived) -> list[str]:
    """Each arm's search space, each range with where it came from, then what the derivation
    did beyond the ranges and what it could not match (caveats)."""
    lines = []
    for a in derived.arms:
        role = "candidate" if a.candidate else "baseline"
        where = dict(a.sources)
        ranges = "; ".join(
            f"{k} [{r.low:g}, {r.high:g}]" + (f" ({where[k]})" if k in where else "")
            for k, r in a.search
        )
        lines.append(f"{a.label} ({role}) searches {ranges}")
        lines += [f"  {n}" for n in a.notes]
        lines += [f"  caveat: {c}" for c in a.caveats]
    return lines


def opening_line(p: Plan, scale: str) -> str:
    """The bench's first line: what trains now (each arm's tuning runs without a result), what
    may follow, and the estimate of the whole (``scale``: ``local scale``, a protocol file)."""
    now = [f"{a.label} {a.tuning - a.tuning_done}" for a in p.arms if a.tuning > a.tuning_done]
    cores = os.cpu_count() or 1
    n = sum(a.tuning - a.tuning_done for a in p.arms)
    first = f"{n} tuning run(s) now ({', '.join(now)})" if now else "no tuning run (all reused)"
    return (
        f"{p.grid} ({scale}): training at most {p.to_train_max} runs of {p.total_max}: {first}, "
        f"then at most {p.extension_max} lr-extension and {p.confirmation} confirmation runs "
        f"planned from their results; about {p.cpu_hours_to_train:.2g} CPU-hours "
        f"(~{p.cpu_hours_to_train * 60 / cores:.0f} min on {cores} idle cores, an estimate)"
    )
