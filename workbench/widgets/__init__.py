"""The notebook workbench: ipywidgets panels over sweeps (state and decisions kept apart from drawing).

- `labeler` (`Labeler`): label questions with the mouse, evidence as exact spans, saved to questions.jsonl.
- `explorer`: watch semantic cuts move on one document (for teaching).
- `panel`: try one variant at a time by hand and see where it lands among others.
- `sweeper`: sweep a grid from widgets, scrub the measured variants, compare two, export.

Each is a `base.PanelBase`: dataset, store, embedder and a message line where every callback's
exception is shown.
"""

from workbench.widgets.explorer import Explorer, explorer
from workbench.widgets.labeler import Labeler, labeler
from workbench.widgets.panel import Panel, control, panel, read, typed_as_json
from workbench.widgets.sweeper import Sweeper, sweeper

__all__ = ["Explorer", "Labeler", "Panel", "Sweeper", "control", "explorer", "labeler", "panel", "read", "sweeper",
           "typed_as_json"]
