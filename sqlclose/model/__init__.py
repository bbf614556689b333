"""The model layer: what a release is about — the spec, hierarchies, the lattice, class tables.

No SQL and no engine here; every other layer may use it."""
