"""Every table the package fills by registration: chunking strategies, retrieval stages, document readers.

Why one place: the tables are process-global and filled at import, and a user adds to them in a
notebook (register_function, a stage, a reader). Another process (a Ray worker, a test that must
leave no trace) rebuilds them from one `snapshot()`: it pickles with cloudpickle, as Ray does
(user functions and adapter closures by value, module functions by reference).
"""

from __future__ import annotations

from typing import Any

from workbench.chunkers.registry import STRATEGIES
from workbench.core.stages import STAGES
from workbench.ingest.folder import READERS

Snapshot = tuple[dict[str, Any], ...]  # a copy of each table, in TABLES order
TABLES = (STRATEGIES, STAGES, READERS)


def snapshot() -> Snapshot:
    """A copy of every table, to `restore` here later or in another process."""
    return tuple(dict(table) for table in TABLES)


def restore(saved: Snapshot) -> None:
    """Make every table exactly what it was in `saved`: entries registered since are gone, removed ones back."""
    for table, copy in zip(TABLES, saved, strict=True):
        table.clear()
        table.update(copy)
