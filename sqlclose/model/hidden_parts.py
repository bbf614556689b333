"""Which path parts below a folder of a table its readers skip (Spark's ``shouldFilterOutPathName``):
one rule for the folder's listing (``engine.listing``) and for the stamp that tells it changed
(``model.file_stamps``), so that what is skipped as no file of the table is never a change to it."""

from __future__ import annotations


def hidden_name(name: str) -> bool:
    """A file or folder name Spark's and Hive's readers skip (``_temporary``, ``.staging``, ``_x.parquet``)."""
    return name.startswith(".") or (name.startswith("_") and "=" not in name)
