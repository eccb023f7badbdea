"""Token budgets at a fraction of their cost: which runs of a grid branch from one stable phase.

Under the ``wsd`` schedule (warmup, constant lr, a final decay over the last ``decay_frac`` of
the steps) two runs that differ only in their budget (``tokens``/``steps``) are the same run up
to the shorter one's decay start: batches are a pure function of (seed, step) and the lr agrees
there. The runs of a grid that differ only in their budget form a *group* (one per configuration
and seed). Its longest run is the *parent*: trained as ever, it also saves its state at each
shorter run's decay start (its *branch point*); each shorter run, a *branch*, starts from that
state and trains only its cooldown. A branch is the run it replaces: same run_id, same row and
curve (its curve holds the parent's points up to the branch point).

Why a parent rather than a chain (each budget from the next shorter one's state): the branches
of one parent do not depend on one another, so all of them can train at once as soon as the
parent passed their branch points, a failed branch costs no other, and a re-submit needs only
the parent's branch-point file of each missing branch.

Runs branch only where their schedules agree up to the branch point; where they do not (a warmup
given as a fraction of ``steps``, so that it differs between budgets from step 0) the plan says
which runs cannot branch and why, and they train alone. ``branch: off`` (the grid's key, or the
launcher profile's) turns it off. Torch-free: a dry run plans without importing torch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.core.catalogue import FIELDS, flat
from harness.core.config import RunConfig
from harness.core.errors import unknown_choice
from harness.core.fields import Role
from harness.optim.schedule import decay_steps, lr_at

BRANCH_MODES = ("auto", "off")
"""Values of ``branch:`` (grid or launcher profile): ``auto`` branches every wsd budget group
that can; ``off`` trains every run alone."""

BUDGET_FIELDS = ("tokens", "steps")
"""The fields that tell the runs of one group apart."""

DERIVED_FROM_BUDGET = ("warmup_steps",)
"""Fields a grid may derive from the budget (``warmup_steps: "0.1 * steps"``): they may differ
within a group, and then its runs cannot branch (checked, with the reason)."""

_LEFT_OUT = frozenset(
    {*BUDGET_FIELDS, *DERIVED_FROM_BUDGET}
    | {f.name for f in FIELDS.values() if f.role in (Role.IDENTITY, Role.LABEL)}
)


@dataclass(frozen=True, slots=True)
class Branch:
    """A run trained from its parent's state at its decay start."""

    run_id: str
    """The branch (the shorter run)."""
    parent: str
    """The run whose stable phase it uses (the longest of its group)."""
    step: int
    """The branch point: the steps done when the branch starts (its decay start)."""
    steps: int
    """The branch's total steps (it trains ``steps - step`` of them itself)."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A run of a budget group that trains alone, and why."""

    run_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class BranchPlan:
    """Which runs branch from which, and what that saves."""

    branches: tuple[Branch, ...] = ()
    """Every branch, parents' order, then by branch point."""
    refused: tuple[Refused, ...] = ()
    """Runs of wsd budget groups that cannot branch (each trains alone), with the reason."""
    steps_alone: int = 0
    """Steps of the planned runs, each trained alone."""
    steps_branched: int = 0
    """Steps trained with the branches (the stable phases of branches are not trained again)."""

    def parent_of(self, run_id: str) -> Branch | None:
        """The branch ``run_id`` is, or None when it trains alone or is a parent."""
        return next((b for b in self.branches if b.run_id == run_id), None)

    def points_of(self, parent: str) -> tuple[Branch, ...]:
        """The branches of ``parent`` (what it saves its state for), by branch point."""
        return tuple(b for b in self.branches if b.parent == parent)

    @property
    def parents(self) -> tuple[str, ...]:
        """The runs that are the parent of some branch, in plan order."""
        return tuple(dict.fromkeys(b.parent for b in self.branches))

    def describe(self) -> str:
        """What a dry run prints (lines, each ending in a newline; empty without budget
        groups): the cost with and without branching, and the runs that cannot branch, why."""
        if not self.branches and not self.refused:
            return ""  # no wsd runs that differ only in their budget: nothing to say
        saved = 1 - self.steps_branched / self.steps_alone if self.steps_alone else 0.0
        lines = [
            f"branching: {len(self.branches)} runs branch from {len(self.parents)} stable "
            f"phases; steps trained {self.steps_branched:,} with branching, "
            f"{self.steps_alone:,} without ({saved:.0%} less)"
        ]
        lines += [f"  cannot branch: {r.run_id}: {r.reason}" for r in self.refused]
        return "".join(f"{line}\n" for line in lines)

    def to_json(self) -> dict[str, object]:
        """The plan as the worker reads it (:func:`from_json`)."""
        return {"branches": [[b.run_id, b.parent, b.step, b.steps] for b in self.branches]}


def from_json(doc: Mapping[str, object]) -> BranchPlan:
    """The plan :meth:`BranchPlan.to_json` wrote (costs and refusals are not kept)."""
    rows = doc.get("branches", [])
    assert isinstance(rows, list), f"branch plan: 'branches' is a {type(rows).__name__}"
    return BranchPlan(tuple(Branch(str(r), str(p), int(s), int(n)) for r, p, s, n in rows))


def check_mode(value: object, where: str) -> str:
    """``value`` as a ``branch:`` mode (YAML reads an unquoted ``off`` as False, ``on`` as
    True: they mean ``off`` and ``auto``).

    Raises:
        UserError: not one of :data:`BRANCH_MODES` (exit 2, naming the valid ones).
    """
    if isinstance(value, bool):
        value = "auto" if value else "off"
    if value not in BRANCH_MODES:
        raise unknown_choice("branch", value, BRANCH_MODES, where=where)
    return str(value)


def branch_point(run: RunConfig) -> int:
    """The step at which ``run``'s wsd decay starts (its steps before it are the stable phase)."""
    return run.data.steps - decay_steps(run.optim, run.data.steps)


def _key(run: RunConfig) -> tuple[tuple[str, object], ...]:
    """What a run is besides its budget: runs with the same key form a budget group."""
    return tuple((k, v) for k, v in flat(run).items() if k not in _LEFT_OUT)


def _disagreement(parent: RunConfig, run: RunConfig, step: int) -> str | None:
    """Why ``run`` cannot start from ``parent``'s state at ``step``; None when it can."""
    for name in DERIVED_FROM_BUDGET:
        a, b = flat(run)[name], flat(parent)[name]
        if a != b:
            return (
                f"{name} {a} differs from {b} of {parent.run_id} (a value derived from the "
                "budget: their schedules differ from step 0)"
            )
    if run.data.tokens_per_step != parent.data.tokens_per_step:
        return f"tokens per step differ from {parent.run_id}'s"
    # The schedules agree before the branch point: warmup, then the constant lr (checked at
    # every step of the warmup and at the first and last steps of the stable phase).
    checked = {*range(min(step, run.optim.warmup_steps + 1)), max(0, step - 1)}
    for t in sorted(checked):
        if lr_at(t, run) != lr_at(t, parent):
            return f"its lr at step {t} differs from {parent.run_id}'s"
    return None


def plan_branches(runs: Sequence[RunConfig], mode: str = "auto") -> BranchPlan:
    """The branches of ``runs`` (see the module doc); ``mode`` ``off``: none.

    A group is the wsd runs that differ only in ``tokens``/``steps`` (and fields derived from
    them); its longest run is the parent. A run whose branch point is at step 0 (no stable phase)
    or at the parent's own length trains alone without a word: nothing to share.
    """
    steps_alone = sum(r.data.steps for r in runs)
    if mode == "off":
        return BranchPlan(steps_alone=steps_alone, steps_branched=steps_alone)
    groups: dict[tuple[tuple[str, object], ...], list[RunConfig]] = defaultdict(list)
    for run in runs:
        if run.optim.schedule == "wsd":
            groups[_key(run)].append(run)
    branches: list[Branch] = []
    refused: list[Refused] = []
    for group in groups.values():
        budgets = {r.data.steps for r in group}
        if len(budgets) < 2:
            continue
        parent = max(group, key=lambda r: (r.data.steps, r.run_id))
        mine: list[Branch] = []
        for run in group:
            step = branch_point(run)
            if run is parent or run.data.steps == parent.data.steps or step == 0:
                continue
            why = _disagreement(parent, run, step)
            if why is None:
                mine.append(Branch(run.run_id, parent.run_id, step, run.data.steps))
            else:
                refused.append(Refused(run.run_id, why))
        branches += sorted(mine, key=lambda b: (b.step, b.run_id))
    saved = sum(b.step for b in branches)
    return BranchPlan(tuple(branches), tuple(refused), steps_alone, steps_alone - saved)


def dependency_order(runs: Iterable[RunConfig], plan: BranchPlan) -> list[RunConfig]:
    """``runs`` with every parent first (in their order), then the others (branches after the
    parents they start from; a run that is neither keeps its place among them)."""
    runs = list(runs)
    parents = set(plan.parents)
    return [r for r in runs if r.run_id in parents] + [r for r in runs if r.run_id not in parents]
