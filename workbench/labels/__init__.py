"""Labels: answer spans from what people and libraries write (quotes located in the source text)."""

from workbench.labels.generate import generate

__all__ = ["generate"]
