"""The project's own analyses, run from the root of a checkout as modules:
``budget`` gives the epochs of a confirmation from a budget study's val
curves (docs/evidence.md)."""
