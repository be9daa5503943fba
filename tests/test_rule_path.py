"""A message the local judge's rules decide ("thanks", "commit this") costs the hook process no
model or numpy import: it is decided before the judge loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memsift.judge.local import LocalJudge
from memsift.judge.rules import rule_kind, sure


def _hook(tmp_path, prompt: str) -> subprocess.CompletedProcess:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"session_id": "s1", "transcript_path": "", "cwd": str(project),
                          "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    code = ("import runpy, sys\n"
            "sys.argv = ['memsift', 'hook', 'claude-code', 'UserPromptSubmit']\n"
            "try:\n"
            "    runpy.run_module('memsift', run_name='__main__')\n"
            "except SystemExit:\n"
            "    pass\n"
            "print('NUMPY' if 'numpy' in sys.modules else 'LEAN', file=sys.stderr)\n")
    env = dict(os.environ, MEMSIFT_HOME=str(tmp_path / "home"))
    env.pop("MEMSIFT_LLM_BASE_URL", None)
    env.pop("MEMSIFT_COGNEE_URL", None)
    return subprocess.run([sys.executable, "-c", code], input=payload.encode(), env=env,
                          capture_output=True, timeout=60, check=False)


@pytest.mark.parametrize("prompt", ["thanks", "commit this"])
def test_a_message_the_rules_decide_loads_no_numpy(tmp_path, prompt):
    done = _hook(tmp_path, prompt)
    assert done.returncode == 0
    assert done.stderr.decode().strip().splitlines()[-1] == "LEAN"
    assert done.stdout.decode().strip() == ""


def test_a_message_the_rules_leave_open_goes_to_the_judge(tmp_path):
    done = _hook(tmp_path, "why did we pick postgres for the ledger?")
    assert done.returncode == 0
    assert done.stderr.decode().strip().splitlines()[-1] == "NUMPY"


@pytest.mark.parametrize("message", ["thanks", "commit this", "ok", "run the tests"])
def test_the_rule_path_gives_what_the_local_judge_gives(message):
    assert LocalJudge().kind(message) == sure(rule_kind(message))
