"""memsift as pip and pipx install it: a wheel, installed non-editable into a fresh venv,
runs `memsift demo` and the prompt hook from there, with nothing of the source tree around.

The wheel is built by pip (its build isolation fetches setuptools from the package index, or
its cache). The fresh venv gets memsift's dependencies from this environment's site-packages
through a .pth line, so no other download is needed; memsift itself comes from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE = ("pyproject.toml", "README.md", "LICENSE", "memsift")  # what the wheel is built from
BUILD_TIMEOUT_S = 300  # a cold pip cache downloads setuptools first
RUN_TIMEOUT_S = 120


def _run(cmd: list[str], cwd: Path, env: dict, stdin: bytes | None = None):
    done = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True,
                          timeout=BUILD_TIMEOUT_S, check=False)
    assert done.returncode == 0, (cmd, done.stdout[-2000:], done.stderr[-2000:])
    return done


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A fresh venv holding memsift from its wheel and this environment's dependencies."""
    work = tmp_path_factory.mktemp("wheel")
    env = _clean_env()
    source = _source_copy(work / "src")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"),
          str(source)], work, env)
    wheel = next((work / "dist").glob("memsift-*.whl"))
    target = work / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = target / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
          str(wheel)], work, env)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     work, env).stdout.decode().strip())
    # Appended after the venv's own site-packages: memsift resolves to the wheel's copy.
    (site / "memsift-test-deps.pth").write_text("".join(f"{p}\n" for p in _dependency_paths()))
    return target


def _dependency_paths() -> list[str]:
    """The folders this interpreter finds its packages in, minus the source tree."""
    found = [sysconfig.get_path("purelib"), *sys.path]
    return list(dict.fromkeys(p for p in found if p and "site-packages" in p
                              and Path(p).is_dir() and Path(p).resolve() != REPO))


def _clean_env() -> dict:
    """This environment without a PYTHONPATH that would put a source tree before the wheel."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _source_copy(dest: Path) -> Path:
    """The files a wheel is built from, copied: a build in the clone would leave build/ there."""
    dest.mkdir()
    for name in SOURCE:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, dest / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif (REPO / name).exists():
            shutil.copy2(REPO / name, dest / name)
    return dest


def test_the_installed_wheel_is_not_the_source_tree(wheel_venv, tmp_path):
    python = wheel_venv / "bin" / "python"
    done = _run([str(python), "-P", "-c", "import memsift; print(memsift.__file__)"], tmp_path,
                _clean_env())
    location = Path(done.stdout.decode().strip())
    assert wheel_venv in location.parents and REPO not in location.parents


def test_memsift_demo_runs_from_the_installed_wheel(wheel_venv, tmp_path):
    done = _run([str(wheel_venv / "bin" / "memsift"), "demo"], tmp_path, _clean_env())
    out = done.stdout.decode()
    assert "memsift demo" in out and "characters in all" in out  # the table and its summary
    assert "DemoError" not in done.stderr.decode()


def test_the_prompt_hook_adds_a_note_from_the_installed_wheel(wheel_venv, tmp_path,
                                                              isolated_env):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    memsift = str(wheel_venv / "bin" / "memsift")
    env = _clean_env()
    note = "The staging database listens on port 6543, not on 5432."
    data = tmp_path / "notes.json"
    data.write_text(json.dumps({"notes": [{"id": "n1", "text": note, "written": "2026-11-01"}]}))
    _run([memsift, "import", str(data), "--project", str(project)], tmp_path, env)
    payload = {"session_id": "s1", "transcript_path": "", "cwd": str(project),
               "hook_event_name": "UserPromptSubmit",
               "prompt": "which port does the staging database use?"}
    done = _run([str(wheel_venv / "bin" / "python"), "-P", "-m", "memsift", "hook",
                 "claude-code", "UserPromptSubmit"], project, env,
                stdin=json.dumps(payload).encode())
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "6543" in context and "<memsift-memory>" in context
