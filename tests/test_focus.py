"""A long prompt (a pasted log, a file) is judged on the question around the paste: it still
gets the memory that answers it, and the judge reads a bounded part of it. What that costs
next to a short prompt is measured by `memsift bench --scale`, not here: a hook process on a
loaded test machine can pass the offline one-second budget whatever the prompt's length."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from fakes.polling import PATIENT_BUDGET

from memsift.audit import read_audit
from memsift.bench.replay import Transcript, hook_payload, memsift_home, prepare
from memsift.bench.scale import EXPECTED_NOTE, QUESTION, long_prompt
from memsift.commands.demo_run import load_sample
from memsift.prompt.focus import FOCUS_CHARS, GAP, focus

LOG = "".join(f"E   AssertionError: refund {n} expected 200, got 500\n" for n in range(3000))


def test_a_short_prompt_is_judged_whole():
    assert focus("where did I leave the refunds branch?") == (
        "where did I leave the refunds branch?")
    assert focus("x" * FOCUS_CHARS) == "x" * FOCUS_CHARS


def test_a_fenced_paste_leaves_the_question_before_and_after_it():
    prompt = f"why do the refund tests fail?\n```\n{LOG}```\nit started after the rebase"
    assert focus(prompt) == f"why do the refund tests fail?{GAP}it started after the rebase"


def test_a_paste_without_fences_is_judged_on_its_head_and_tail():
    prompt = "why do the refund tests fail? here is the log:\n" + LOG + "what changed?"
    judged = focus(prompt)
    assert judged.startswith("why do the refund tests fail? here is the log:")
    assert judged.endswith("what changed?") and GAP in judged
    assert len(judged) <= FOCUS_CHARS


def test_a_prompt_that_is_all_paste_is_still_judged_on_a_bounded_part():
    judged = focus(f"```\n{LOG}```")
    assert 0 < len(judged) <= FOCUS_CHARS


def test_focus_on_a_five_megabyte_prompt_is_fast():
    prompt = "what broke?\n```\n" + "lorem ipsum " * (5 * 1024 * 1024 // 12) + "\n```\nthanks"
    begin = time.perf_counter()
    assert focus(prompt) == f"what broke?{GAP}thanks"
    assert time.perf_counter() - begin < 0.5


def _hook(prompt: str, transcript: Transcript, session: str) -> dict:
    payload = json.loads(hook_payload(prompt, transcript, 1)) | {"session_id": session}
    done = subprocess.run([sys.executable, "-P", "-m", "memsift", "hook", "claude-code",
                           "UserPromptSubmit"], input=json.dumps(payload).encode(),
                          capture_output=True, timeout=60, check=True,
                          env=dict(os.environ) | PATIENT_BUDGET,
                          cwd=transcript.cwd)
    assert done.returncode == 0
    return read_audit(1)[0] | {"stdout": done.stdout.decode()}


def test_a_99000_character_prompt_gets_the_note_a_short_one_gets(tmp_path):
    with memsift_home(tmp_path / "home"):
        _, project = prepare(load_sample(), tmp_path / "work", "embedded")
        results = {}
        for name, text in (("short", QUESTION), ("long", long_prompt())):
            transcript = Transcript(tmp_path / f"{name}.jsonl", project)
            transcript.user(text)
            results[name] = _hook(text, transcript, f"focus-{name}")
    long, short = results["long"], results["short"]
    assert long["prompt_chars"] == 99_000
    for decision in (short, long):
        assert [a["id"] for a in decision["added"]] == [EXPECTED_NOTE]
        assert not [s for s in decision["steps"] if "timeout" in str(s["result"])]
    assert long["steps"][0]["name"] == "focus"
    judged = int(long["steps"][0]["result"].split(" of ")[0])
    assert len(QUESTION) <= judged <= FOCUS_CHARS


def test_a_prompt_past_the_old_100000_character_cap_is_judged_too(tmp_path):
    with memsift_home(tmp_path / "home"):
        _, project = prepare(load_sample(), tmp_path / "work", "embedded")
        text = long_prompt(chars=300_000)
        transcript = Transcript(tmp_path / "t.jsonl", project)
        transcript.user(text)
        decision = _hook(text, transcript, "focus-300k")
    assert decision["prompt_chars"] == 300_000 and decision["steps"][0]["name"] == "focus"
    assert [a["id"] for a in decision["added"]] == [EXPECTED_NOTE]
