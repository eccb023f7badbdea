"""The tasks lm-evaluation-harness knows: its own (``lm_eval/tasks``) and those of folders of
task YAML given with ``--include`` (``docs/task_guide.md``; local files through
``dataset_path: json`` and ``dataset_kwargs: {data_files: ...}``)."""

from __future__ import annotations

import difflib
import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core.errors import UserError

INSTALL = "pip install 'harness[eval]' (lm-eval)"
"""How to install the evaluator."""


def require_lm_eval() -> None:
    """Raises UserError (how to install it) when lm-eval is not installed."""
    if importlib.util.find_spec("lm_eval") is None:
        raise UserError(f"harness eval needs lm-evaluation-harness, not installed here: {INSTALL}")


def task_manager(include: Sequence[Path] = (), tasks: Sequence[str] = ()) -> Any:
    """lm-eval's ``TaskManager`` over the task YAML under ``include`` and, unless those hold
    every one of ``tasks`` as a task (a group there may name lm-eval's tasks), lm-eval's own
    (indexing its thousands of tasks takes seconds; one manager per set of folders and process).

    Raises:
        UserError: lm-eval is not installed; an ``include`` folder does not exist.
    """
    require_lm_eval()
    for folder in include:
        if not Path(folder).is_dir():
            raise UserError(f"--include {folder}: no such folder (a folder of task YAML files)")
    folders = tuple(str(Path(p).resolve()) for p in include)
    if folders and tasks:
        own = _manager(folders, False)
        if all(t in own.all_subtasks for t in tasks):
            return own
    return _manager(folders, True)


@functools.cache
def _manager(folders: tuple[str, ...], defaults: bool) -> Any:
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=list(folders) or None, include_defaults=defaults)


def check_tasks(tasks: Sequence[str], include: Sequence[Path] = ()) -> None:
    """Raises UserError naming the first task lm-eval does not know, with the nearest names.

    Raises:
        UserError: no task, an unknown task, lm-eval not installed, a missing ``include``.
    """
    if not tasks:
        raise UserError("--tasks: no task given (e.g. --tasks hellaswag,arc_easy)")
    known = task_manager(include, tasks).all_tasks
    for task in tasks:
        if task not in known:
            near = difflib.get_close_matches(task, known, n=5, cutoff=0.6)
            hint = f"nearest: {', '.join(near)}" if near else "none is close"
            raise UserError(
                f"--tasks: unknown task {task!r}; valid: the {len(known)} tasks, groups and tags "
                f"lm-eval knows ({hint}; `lm-eval ls tasks` lists them) and those of --include "
                "folders"
            )
