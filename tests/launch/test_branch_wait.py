"""What a branch starts from (harness.launch.branching.start_from): its parent's state once it
is there, waiting while the parent trains; alone (said in its log) when the parent never starts;
stopped when asked while it waits."""

from __future__ import annotations

import pytest

from harness.core import paths
from harness.core.files import try_locked
from harness.grid.branches import Branch, BranchPlan
from harness.launch import branching


@pytest.fixture
def plan_root(tmp_path):
    plan = BranchPlan((Branch("child", "parent", 8, 10),))
    branching.write_plan(tmp_path, "g", plan)
    return tmp_path


def test_a_branch_starts_from_its_parents_state_and_a_run_of_no_family_from_nothing(plan_root):
    point = paths.branch_point_path(plan_root, "g", "child")
    point.parent.mkdir(parents=True)
    point.write_bytes(b"state")
    assert branching.start_from(plan_root, "g", "child") == point
    assert branching.start_from(plan_root, "g", "parent") is None
    assert branching.families(plan_root, "g") == {"parent": "parent", "child": "parent"}


def test_a_branch_whose_parent_never_starts_trains_alone_and_says_so(plan_root, monkeypatch):
    monkeypatch.setattr(branching, "START_WAIT_S", 0.3)
    said: list[str] = []
    assert branching.start_from(plan_root, "g", "child", log=said.append) is None
    alone = "[child] trained alone from step 0: its parent parent has not started within 0 s"
    assert said == [alone]


def test_a_branch_waits_while_its_parent_trains_and_stops_when_asked(plan_root, monkeypatch):
    monkeypatch.setattr(branching, "START_WAIT_S", 0.0)  # a training parent is waited for anyway
    asked = iter([False, False, False, True])
    with try_locked(paths.run_lock_path(plan_root, "g", "parent")) as held:
        assert held
        with pytest.raises(branching.WaitStopped, match="waiting for parent"):
            branching.start_from(plan_root, "g", "child", should_stop=lambda: next(asked))
