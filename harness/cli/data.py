"""``harness data``: prepare tokenized datasets."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.options import data_option


@click.group()
def data() -> None:
    """Tokenized datasets (nanoGPT-style train.bin / val.bin memmaps)."""


@data.command()
@click.argument("name", required=False)
@click.option("--force", is_flag=True, help="Rebuild even if prepared.")
@data_option
def prepare(name: str | None, force: bool, data: Path | None) -> None:
    """Build dataset NAME (default: the default dataset) from text shipped in packages.

    Example: harness data prepare classics-bpe8k
    """
    from harness.data.batches import TokenData
    from harness.data.catalogue import DEFAULT_DATASET, data_root
    from harness.data.prepare import prepare

    path = prepare(name or DEFAULT_DATASET, data_root(data), force=force)
    tokens = TokenData(path)
    click.echo(
        f"{path}: {len(tokens.train):,} train / {len(tokens.val):,} val tokens, "
        f"vocab {tokens.vocab_size}, tokenizer {tokens.meta.get('tokenizer', 'your own')}"
    )


@data.command("list")
def list_() -> None:
    """The registered datasets.

    Example: harness data list
    """
    from harness.data.catalogue import DATASETS

    for name, spec in DATASETS.items():
        click.echo(f"{name:20} vocab {spec.vocab_size:6}  {spec.doc}")
