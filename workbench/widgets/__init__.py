"""The notebook workbench: ipywidgets panels over sweeps (state and decisions kept apart from drawing).

- `panel`: try one variant at a time by hand and see where it lands among others.
"""

from workbench.widgets.panel import Panel, control, panel, read, typed_as_json

__all__ = ["Panel", "control", "panel", "read", "typed_as_json"]
