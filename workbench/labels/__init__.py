"""Labels: answer spans from what people and libraries write (quotes located in the source text)."""
