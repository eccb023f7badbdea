"""The candidate's search space is derived from the candidate and stated before it runs (issue
38, item 4): an lr range centred on its default when that lies outside the baseline's (Prodigy's
lr 1.0); a multiplier of the lr (AdamAtan2's ``a``) not searched as a second lr; a range the
constructor bounds (``cautious_factor <= 1``) kept inside; the weight-decay convention probed
and matched to the protocol's decoupled decay by the optimizer's own flag (ADOPT's
``weight_decouple``), else stated as a caveat; a scrambled quasi-random sequence."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.bench import derive_bench
from harness.bench.derive import derive
from harness.bench.protocol import load_protocol
from harness.bench.render import plan_text
from harness.cli import main

pytestmark = pytest.mark.slow  # each probes an optimizer in a child process (seconds)

PROTOCOLS = Path(__file__).resolve().parents[2] / "protocols"


def test_prodigys_lr_range_is_centred_on_its_default_1(tmp_path: Path) -> None:
    """Before: AdamW's [1e-3, 3e-2], where Prodigy (lr 1.0 by design) is 30-1000x off."""
    d = derive_bench("pytorch_optimizer:Prodigy", root=tmp_path, scale="local")
    lr = dict(d.candidate.search)["lr"]
    assert lr.low < 1.0 < lr.high
    assert lr.high / lr.low == pytest.approx(30, rel=1e-3)  # as wide as the baseline's
    assert "centred on its default lr=1" in dict(d.candidate.sources)["lr"]


def test_adam_atan2s_lr_multiplier_is_not_searched_and_bounds_are_kept(tmp_path: Path) -> None:
    """Before: ``a`` (the update is multiplied by lr * a) searched over [0.127, 12.7], a second
    lr axis; ``cautious_factor`` (asserted <= 1) given [0.1, 10]."""
    d = derive_bench("adam_atan2_pytorch:AdamAtan2", root=tmp_path, scale="paper")
    search = dict(d.candidate.search)
    assert "a" not in search
    assert all("a" not in s for s in d.candidate.settings)
    assert any("a: a multiplier of the lr" in n for n in d.candidate.notes)
    assert search["cautious_factor"].high <= 1.0
    assert "the constructor refuses" in dict(d.candidate.sources)["cautious_factor"]
    assert all(s["cautious_factor"] <= 1.0 for s in d.candidate.settings)


@pytest.mark.parametrize("optimizer", ["pytorch_optimizer:ADOPT", "pytorch_optimizer:Adan"])
def test_a_coupled_decay_is_switched_to_the_protocols_by_its_flag(tmp_path, optimizer) -> None:
    """Before: ``weight_decay: 0.1`` went to ``weight_decouple=False`` (L2 through the
    gradient) while the protocol calls its decay decoupled."""
    d = derive_bench(optimizer, root=tmp_path, scale="local")
    assert all(s["weight_decouple"] is True for s in d.candidate.settings)
    note = next(n for n in d.candidate.notes if n.startswith("weight decay"))
    assert "weight_decouple=True" in note and "coupled" in note


def test_a_decay_no_flag_can_match_is_a_caveat_in_the_plan(tmp_path: Path) -> None:
    opt = tmp_path / "l2.py"
    opt.write_text(
        textwrap.dedent(
            """
            import torch

            class L2Adam(torch.optim.Adam):  # Adam's decay: L2, through the gradient
                def __init__(self, params, lr=1e-3, weight_decay=0.0):
                    super().__init__(params, lr=lr, weight_decay=weight_decay)
            """
        )
    )
    d = derive(load_protocol(PROTOCOLS / "laptop.yaml"), f"{opt}:L2Adam", tmp_path)
    [caveat] = d.candidate.caveats
    assert "coupled" in caveat and "not the protocol's decoupled" in caveat


def test_the_quasi_random_settings_do_not_rise_together(tmp_path: Path) -> None:
    """Before: the unscrambled Halton sequence's dimensions of large prime bases rose together
    (weight decay 0.0075, 0.011, 0.017, 0.026 next to cautious_factor 0.15, 0.23, 0.35, 0.53)."""
    opt = tmp_path / "many.py"
    opt.write_text(
        textwrap.dedent(
            """
            import torch

            class Many(torch.optim.SGD):
                def __init__(self, params, lr=1e-2, weight_decay=0.0, p1=0.1, p2=0.2, p3=0.3,
                             p4=0.4, p5=0.45):
                    super().__init__(params, lr=lr, weight_decay=weight_decay)
            """
        )
    )
    text = (PROTOCOLS / "laptop.yaml").read_text().replace("settings: 2 ", "settings: 6 ")
    (tmp_path / "p.yaml").write_text(text)
    d = derive(load_protocol(tmp_path / "p.yaml"), f"{opt}:Many", tmp_path)
    points = d.candidate.settings[2:]
    keys = sorted(points[0])
    assert len(keys) == 6 and len(points) == 4
    rising = [k for k in keys if [x[k] for x in points] == sorted(x[k] for x in points)]
    assert len(rising) <= 1, (rising, points)  # unscrambled: weight_decay, p3, p4, p5 rose
    again = derive(load_protocol(tmp_path / "p.yaml"), f"{opt}:Many", tmp_path)
    assert again.candidate.settings == d.candidate.settings  # seeded: the same points


def test_the_dry_run_states_each_arms_space_and_where_it_came_from(tmp_path: Path) -> None:
    d = derive_bench("pytorch_optimizer:Prodigy", root=tmp_path, scale="local")
    from harness.bench import plan

    text = plan_text(plan(d, tmp_path, tmp_path), d)
    assert "AdamW (baseline) searches lr [0.001, 0.03] (the protocol)" in text
    lr = next(s for s in text.splitlines() if "pytorch_optimizer:Prodigy (candidate) searches" in s)
    assert "lr [0.1826, 5.477] (centred on its default lr=1" in lr


@pytest.mark.slow
def test_adopts_dry_run_shows_its_decay_convention(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main,
        [
            "bench",
            "pytorch_optimizer:ADOPT",
            "--scale",
            "local",
            "--dry-run",
            "--results",
            str(tmp_path / "r"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "weight decay: its default (weight_decouple=False) applies it coupled" in r.output


def test_a_protocol_may_give_the_candidate_its_own_schedule_stated_as_a_caveat(tmp_path) -> None:
    """Issue 38, item 1: schedule-free's authors run it without a decaying schedule; a
    protocol's ``candidate: schedules`` says so for that optimizer only, and the verdict says it."""
    text = (
        (PROTOCOLS / "laptop.yaml")
        .read_text()
        .replace(
            "  search: {}",
            "  search: {}\n  schedules:\n"
            "    schedulefree:AdamWScheduleFree: {schedule: constant, warmup_steps: 0}",
        )
    )
    (tmp_path / "p.yaml").write_text(text)
    p = load_protocol(tmp_path / "p.yaml")
    d = derive(p, "schedulefree:AdamWScheduleFree", tmp_path)
    block = d.document["grid"]["optimizer"]["schedulefree:AdamWScheduleFree"]
    assert block["schedule"] == ["constant"] and block["warmup_steps"] == [0]
    assert "AdamW" in d.document["grid"]["optimizer"]["adamw"]["label"]
    assert "schedule" not in d.document["grid"]["optimizer"]["adamw"]
    [caveat] = d.candidate.caveats
    assert caveat.startswith("schedule: the candidate runs its own (schedule: constant")
    other = derive(p, "torch.optim:SGD", tmp_path)
    assert "schedule" not in other.document["grid"]["optimizer"]["torch.optim:SGD"]
