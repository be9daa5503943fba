"""Benchmarks."""

from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def environ(**values: str):
    """Set environment variables for this process, restored afterwards."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
