"""User-facing errors. Anything a user typed wrong raises :class:`UserError`; the CLI prints its
one-line message and exits with code 2 before anything is written."""

from __future__ import annotations

from collections.abc import Iterable

MAX_MESSAGE = 4000
"""Characters of an error message shown: a longer one (a huge value echoed back) loses its
middle, keeping its start and its last 500 characters (where the hint usually is)."""


class UserError(ValueError):
    """Bad user input (grid, launcher profile, CLI flag, SQL, data path). Message is one line,
    at most :data:`MAX_MESSAGE` characters."""

    def __init__(self, message: str = "") -> None:
        text = str(message)
        if len(text) > MAX_MESSAGE:
            cut = f" ... ({len(text):,} characters, cut) ... "
            text = text[: MAX_MESSAGE - 500 - len(cut)] + cut + text[-500:]
        super().__init__(text)


def unknown_choice(what: str, value: object, choices: Iterable[str], where: str = "") -> UserError:
    """Build the standard 'unknown X' error naming the bad value and the valid choices."""
    loc = f"{where}: " if where else ""
    valid = ", ".join(sorted(choices))
    return UserError(f"{loc}unknown {what} {value!r}; valid choices: {valid}")


class Stopped(Exception):
    """A signal (Ctrl-C, SIGTERM, SIGHUP) stopped a command after it put its work in order:
    ``lines`` say what became of it (one line per outcome). The CLI prints them and exits with
    ``128 + signum`` (130 for Ctrl-C), the shell's convention."""

    def __init__(self, signum: int, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.signum = signum
        """The signal that stopped the command."""
        self.lines = list(lines)
        """What became of the command's work, one line per outcome."""

    @property
    def exit_code(self) -> int:
        """The command's exit code: 128 + the signal's number."""
        return 128 + self.signum
