"""The one registry idiom: named entries of a kind (optimizers, launchers, figures, datasets, CLI
commands), looked up by name, whose code is imported only when used.

An entry is plain data - a spec naming its code by import path (``"module:attribute"``) - so
creating a registry imports nothing and has no side effect. Entries are given when the registry
is made, added by an explicit :meth:`Registry.register` call, or found by ``discover`` (e.g.
Python entry points of installed packages) the first time a name is missing. An unknown name is a
:class:`~harness.core.errors.UserError` listing the known ones.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

from harness.core.errors import UserError, unknown_choice

T = TypeVar("T")


def is_reference(text: str) -> bool:
    """Whether ``text`` names code (``module:attribute`` or ``file.py:attribute``), not a
    registered name."""
    return ":" in text


def _is_file(module: str) -> bool:
    return module.endswith(".py") or "/" in module


def canonical_reference(ref: str, base: Path | None = None) -> str:
    """``ref`` with a file path made absolute (relative paths are relative to ``base``, else to
    the working directory); module references are returned as they are."""
    module, _, attr = ref.rpartition(":")
    if not _is_file(module):
        return ref
    path = Path(module).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    return f"{path.resolve()}:{attr}"


def is_file_reference(value: Any) -> bool:
    """Whether ``value`` names code in a file (``path/to/file.py:attribute``)."""
    return isinstance(value, str) and is_reference(value) and _is_file(value.rpartition(":")[0])


def location_free(value: Any, base: str | None) -> Any:
    """How a value enters a run's identity: a file reference (``/home/me/proj/opts/my_opt.py:Opt``)
    by its path relative to ``base``, the grid file's folder (``opts/my_opt.py:Opt``,
    ``../shared/my_opt.py:Opt``; POSIX separators), so that a project moved or copied with its
    results keeps its run_ids (the file's code is identified by its fingerprint, recorded in each
    row); any other value, or any value when ``base`` is None (results written before the grid's
    folder was recorded), as it is."""
    if base is None or not is_file_reference(value):
        return value
    module, _, attr = value.rpartition(":")
    return f"{Path(os.path.relpath(module, base)).as_posix()}:{attr}"


ImportCheck = Callable[[str], "str | None"]
"""Imports the module of a reference elsewhere (a child process) first: what stopped it there
(a line), or None when it imported (:func:`checked_imports`)."""

_CHECKS: list[ImportCheck] = []
_CHECKED: set[str] = set()


@contextmanager
def checked_imports(check: ImportCheck) -> Iterator[None]:
    """While the block runs, the module of each user's reference :func:`load_object` loads (a
    file, or a module outside ``harness`` not imported yet) is imported by ``check`` first, once
    per process (:func:`harness.launch.sandbox.import_problem` imports it in a child with a time
    limit): what stopped it there is a :class:`UserError`, and this process does not import it."""
    _CHECKS.append(check)
    try:
        yield
    finally:
        _CHECKS.remove(check)


REFUSED = "refused: "
"""How an :data:`ImportCheck`'s line starts when the child refused the reference itself (a
:class:`UserError`: no such attribute), as this process would have."""


def _check_import(ref: str, module: str) -> None:
    """The check in force (:func:`checked_imports`) on ``ref``'s module, if it needs one: a
    user's module that exists and is not imported yet."""
    if not _CHECKS or ref in _CHECKED:
        return
    if _is_file(module):
        if not Path(module).is_file() or _file_module_name(Path(module)) in sys.modules:
            return  # "no such file", said by load_object; or imported already
    else:
        top = module.split(".")[0]
        if top == "harness" or module in sys.modules or importlib.util.find_spec(top) is None:
            return
    problem = _CHECKS[-1](ref)
    if problem is not None:
        if problem.startswith(REFUSED):
            raise UserError(problem.removeprefix(REFUSED))
        raise UserError(f"{ref!r}: importing {module} in a child process failed: {problem}")
    _CHECKED.add(ref)


def import_check(ref: str) -> str | None:
    """Load ``ref`` (in a child process: :mod:`harness.launch.sandbox`): None when it loads,
    :data:`REFUSED` and the line when it is refused; anything else the user's module does
    (an exit, a hang) is the sandbox's to say."""
    try:
        load_object(ref)
    except UserError as e:
        return REFUSED + str(e)
    return None


def load_object(ref: str) -> Any:
    """The object at ``"module:attribute"`` or ``"path/to/file.py:attribute"`` (importing the
    module; a file is imported once per process, under a name derived from its path). Under
    :func:`checked_imports`, a user's module is imported in a child process first.

    Raises:
        UserError: a malformed reference, a missing file, a module that cannot be imported (any
            error while importing it, ``SystemExit`` included), or no such attribute.
    """
    module, sep, attr = ref.rpartition(":")
    if not sep or not module or not attr:
        raise UserError(f"{ref!r}: expected 'module:attribute' or 'path/to/file.py:attribute'")
    _check_import(ref, module)
    try:
        mod = _import_file(Path(module)) if _is_file(module) else importlib.import_module(module)
    except UserError:
        raise
    except ImportError as e:
        raise UserError(
            f"{ref!r}: cannot import module {module!r} ({e}); install it, put its folder on "
            "PYTHONPATH, or name its file (path/to/file.py:Name)"
        ) from None
    except (Exception, SystemExit) as e:  # the user's module failed while importing
        raise UserError(f"{ref!r}: importing {module} failed: {type(e).__name__}: {e}") from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        names = {n.lower(): n for n in dir(mod) if not n.startswith("_")}
        close = [names[n] for n in difflib.get_close_matches(attr.lower(), names)]
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise UserError(f"{ref!r}: {module} has no attribute {attr!r}{hint}") from None


def load_class(ref: str, base: type[T]) -> type[T]:
    """:func:`load_object` for a class that must be ``base`` or a subclass of it.

    Raises:
        UserError: as :func:`load_object`, or the object is not such a class (naming it).
    """
    found = load_object(ref)
    if not isinstance(found, type):
        raise UserError(f"{ref!r}: {found!r} is not a class")
    if not issubclass(found, base):
        raise UserError(f"{ref!r}: {found!r} is not a subclass of {_qualified(base)}")
    return found


def load_instance(ref: str, kind: type[T]) -> T:
    """:func:`load_object` for an object that must be an instance of ``kind``.

    Raises:
        UserError: as :func:`load_object`, or the object is not a ``kind`` (naming it).
    """
    found = load_object(ref)
    if not isinstance(found, kind):
        raise UserError(f"{ref!r}: {found!r} is not a {_qualified(kind)}")
    return found


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


USER_MODULE_PREFIX = "harness_user_"
"""Prefix of the module name a file imported by path gets."""


def _file_module_name(path: Path) -> str:
    """The module name the file ``path`` is imported under (:data:`USER_MODULE_PREFIX`)."""
    return USER_MODULE_PREFIX + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    name = _file_module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


class Registry(Generic[T]):
    """Named entries of one kind.

    Args:
        what: What an entry is, for messages (``"optimizer"``, ``"figure"``).
        entries: The built-in entries.
        discover: Called once, on the first lookup of an unknown name (or a listing), for entries
            contributed from outside (installed packages); they never replace built-ins.
    """

    def __init__(
        self,
        what: str,
        entries: Mapping[str, T],
        *,
        discover: Callable[[], Mapping[str, T]] | None = None,
    ) -> None:
        self.what = what
        self._entries: dict[str, T] = dict(entries)
        self._discover = discover

    def register(self, name: str, entry: T) -> None:
        """Add ``entry`` under ``name``.

        Raises:
            ValueError: ``name`` is taken.
        """
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is registered already")
        self._entries[name] = entry

    @contextmanager
    def temporarily(self, name: str, entry: T) -> Iterator[None]:
        """``entry`` registered under ``name`` for the ``with`` block (tests, notebooks)."""
        self.register(name, entry)
        try:
            yield
        finally:
            del self._entries[name]

    def _discovered(self) -> None:
        if self._discover is not None:
            found, self._discover = self._discover(), None
            for name, entry in found.items():
                self._entries.setdefault(name, entry)

    def __getitem__(self, name: str) -> T:
        """The entry ``name``; UserError listing the known names otherwise."""
        if name not in self._entries:
            self._discovered()
        if name not in self._entries:
            raise unknown_choice(self.what, name, self._entries)
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self._discovered()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._discovered()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._discovered()
        return len(self._entries)

    def names(self) -> list[str]:
        """Every name, in registration order."""
        return list(self)

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) pairs, in registration order."""
        self._discovered()
        return list(self._entries.items())
