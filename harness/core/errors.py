"""User-facing errors. Anything a user typed wrong raises :class:`UserError`; the CLI prints its
one-line message and exits with code 2 before anything is written."""

from __future__ import annotations

from collections.abc import Iterable


class UserError(ValueError):
    """Bad user input (grid, launcher profile, CLI flag, SQL, data path). Message is one line."""


def unknown_choice(what: str, value: object, choices: Iterable[str], where: str = "") -> UserError:
    """Build the standard 'unknown X' error naming the bad value and the valid choices."""
    loc = f"{where}: " if where else ""
    valid = ", ".join(sorted(choices))
    return UserError(f"{loc}unknown {what} {value!r}; valid choices: {valid}")
