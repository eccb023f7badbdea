"""The result contract: a run's status is a :class:`Status`, whatever spelling it came in."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from harness.core.result import STATUSES, RunResult, Status


def test_a_status_given_as_its_string_is_that_status_and_written_back_as_it() -> None:
    """Rows and spill files hold a status's string; the result read from them carries the enum,
    which serialises to the same string."""
    for text in STATUSES:
        result = RunResult(status=text)  # type: ignore[arg-type]  # the string a file holds
        assert type(result.status) is Status and result.status == text
        assert json.loads(json.dumps(asdict(result)))["status"] == text


def test_an_unknown_status_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown status 'finished'; valid: completed, diverged"):
        RunResult(status="finished")  # type: ignore[arg-type]
