"""Analysis questions by name: one module each, one registry entry each (like figures).

A question's module defines ``answer(q: Query, *, by, over, **options) -> Answer``; its entry
declares the options beyond those every command takes (:class:`Option`, plain data), from which
``harness analyze <name>`` is built (``harness/cli/analyze.py``). Adding a question is its module
and one :class:`Question` below; the CLI does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.core.registry import Registry, load_object


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a question's command."""

    flag: str
    """``--axis``; the keyword is the flag without dashes, ``-`` as ``_``."""
    help: str
    """One line."""
    kind: str = "text"
    """``text``, ``float``, ``int``, ``selector`` (``K=V[,K=V]``, parsed to a Selector) or
    ``choice``."""
    default: object = None
    """Default value (None: required when ``required``, else absent)."""
    required: bool = False
    """Whether the option must be given."""
    choices: tuple[str, ...] = ()
    """The valid values of a ``choice``."""

    @property
    def keyword(self) -> str:
        """The keyword argument of ``answer``."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True, slots=True)
class Question:
    """A kind of ``harness analyze`` question."""

    name: str
    """Command name and module name under ``harness.analysis``."""
    summary: str
    """The command's help (first line: what it answers)."""
    example: str
    """One example command line."""
    options: tuple[Option, ...] = ()
    """Options beyond the common ones."""

    def answerer(self) -> Callable[..., Any]:
        """The module's ``answer`` function (imports it)."""
        return load_object(f"harness.analysis.{self.name.replace('-', '_')}:answer")


_ALPHA = Option("--alpha", "Significance level.", "float", 0.05)
_CONFIDENCE = Option("--confidence", "Two-sided level of intervals.", "float", 0.95)

QUESTIONS: Registry[Question] = Registry(
    "analysis question",
    {
        q.name: q
        for q in (
            Question(
                "power",
                "Seeds needed to detect a difference between b and a, and the smallest "
                "difference the present seeds detect (noncentral t, measured seed variance).",
                "harness analyze power grids/coupled_adam.yaml --a optimizer=adamw "
                "--b optimizer=coupled_adam --metric val_loss --by model",
                (
                    Option("--a", "Rows of arm a, e.g. optimizer=adamw.", "selector", None, True),
                    Option("--b", "Rows of arm b, e.g. optimizer=signum.", "selector", None, True),
                    Option(
                        "--test",
                        "The t test planned.",
                        "choice",
                        "welch",
                        choices=("welch", "paper"),
                    ),
                    Option(
                        "--alternative",
                        "H1 about b vs a; auto: b better.",
                        "choice",
                        "auto",
                        choices=("auto", "less", "greater", "two-sided"),
                    ),
                    _ALPHA,
                    Option("--power", "Wanted probability of detecting it.", "float", 0.8),
                    Option(
                        "--difference",
                        "The difference |b - a| to detect (default: the observed one).",
                        "float",
                    ),
                ),
            ),
            Question(
                "optimum",
                "The fitted optimum of a tuned axis (quadratic in log axis around the best "
                "points) and the metric there, with intervals over seeds; optima outside the "
                "searched range flagged.",
                "harness analyze optimum grids/optimizer_gap.yaml --axis lr --by batch_size",
                (
                    Option("--axis", "The tuned axis to fit (values > 0).", "text", "lr"),
                    _CONFIDENCE,
                ),
            ),
            Question(
                "critical-batch",
                "Steps (and tokens) to a target loss at each batch size per optimizer, and the "
                "critical batch size: 20 % more steps than linear scaling (Zhang et al. 2024), "
                "with its interval.",
                "harness analyze critical-batch grids/batch_size_gap.yaml --target 5.5",
                (
                    Option("--x", "The batch-size column.", "text", "batch_size"),
                    Option(
                        "--target",
                        "Training loss to reach (default: the highest every tuned run reaches).",
                        "float",
                    ),
                    _CONFIDENCE,
                ),
            ),
        )
    },
)
"""Every question beyond the built-in commands, by name."""
