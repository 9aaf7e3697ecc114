"""Holds the stand-in `torch` package that `python -m tapegrad` puts on sys.path for spawned processes."""
