"""Small shared pieces below every family: parameter schemas, the stage registry, tokens, files, errors,
the offline data, the chunk type and quote location. Nothing here imports a family of the package."""
