"""What every part shares: the run configuration and its field catalogue, results' statuses,
errors, file locations, atomic writes, registries and provenance. Imports nothing of the other
parts, and no torch."""
