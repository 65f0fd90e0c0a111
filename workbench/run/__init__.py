"""Running a sweep: the session, the loop over variants, its estimate, the engine and the registries'
snapshots."""
