"""Reading documents and their questions: one module per format family, `folder.READERS` picks by suffix."""

from workbench.ingest.folder import READERS, load_dataset, read_folder

__all__ = ["READERS", "load_dataset", "read_folder"]
