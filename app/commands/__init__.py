"""Command groups of the `mia` CLI, one module each."""
