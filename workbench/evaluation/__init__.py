"""Evaluation: metrics (pure functions), statistics over per-question scores, the score cache."""
