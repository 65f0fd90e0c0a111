"""Reading a sweep: the result with its provenance, and what is computed from it (the verdict, the CI
gate, answer quality, drill-down)."""
