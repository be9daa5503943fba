"""The cascade with memory that lives: superseded notes never reach the prompt, rules come
whenever their subject does, retrievability breaks ties under the item cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fakes.memory import BAG, MemoryStore, WordJudge

from memsift.audit import read_audit
from memsift.bench import horizon
from memsift.config import load_settings
from memsift.events import Event
from memsift.memory.lifecycle import RULES_SHARE
from memsift.memory.notes import Note, NotesFile, notes_path
from memsift.prompt.cascade import run_prompt
from memsift.prompt.selection import MAX_ITEMS

OLD = Note("The staging host is 10.0.2.5, deploy with deploy.sh staging", id="s1",
           written="2026-01-05", meta={"superseded_by": "s2"})
NEW = Note("Actually the staging host moved to 10.0.3.12, deploy with deploy.sh staging",
           id="s2", written="2026-01-20", meta={"supersedes": "s1"})
RULE = Note("Never apply terraform on a Friday: the on-call rotation is thin.", id="r1",
            written="2026-01-06")


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def _run(project, notes, prompt, judge=None, **settings):
    NotesFile(notes_path(load_settings(), project)).append(notes)
    event = Event(host="claude-code", name="UserPromptSubmit", session_id="s", cwd=str(project),
                  prompt=prompt)
    result = run_prompt(event, load_settings(settings), judge=judge or WordJudge(),
                        store=MemoryStore([]), embedder=BAG)
    (decision,) = read_audit(1)
    return result.context, decision


def _added(decision):
    return [(item["id"], item["source"]) for item in decision["added"]]


def test_a_superseded_note_is_never_added_and_its_correction_is(project):
    context, decision = _run(project, [OLD, NEW], "what is the staging host to deploy with?")
    assert _added(decision) == [("s2", "notes")]
    assert "10.0.2.5" not in context and "10.0.3.12" in context


def test_a_rule_is_added_even_when_the_kind_needs_nothing(project):
    prompt = "apply the terraform plan now"
    judge = WordJudge(kinds={prompt: "action"})
    context, decision = _run(project, [RULE], prompt, judge)
    assert _added(decision) == [("r1", "rule")]
    assert "Never apply terraform on a Friday" in context and "[rule r1" in context
    assert {s["name"]: s["result"] for s in decision["steps"]}["kind"] == "no-search"


def test_a_rule_is_not_added_when_its_subject_does_not_come_up(project):
    context, decision = _run(project, [RULE], "rename the settings button")
    assert context == "" and decision["added"] == []


def test_rules_keep_to_their_share_of_the_budget(project):
    rules = [Note(f"Never apply terraform on a Friday, case {i}: " + "x" * 120, id=f"r{i}")
             for i in range(6)]
    _, decision = _run(project, rules, "apply terraform", **{"budget.chars": 1200})
    added = [item for item in decision["added"] if item["source"] == "rule"]
    assert 0 < len(added) * 160 <= 1200 * RULES_SHARE


def test_fresher_note_wins_a_tie_at_the_item_cap(project, monkeypatch):
    now = datetime(2026, 3, 1, tzinfo=UTC)
    notes = [Note(f"celery redis broker retries capped, variant {i}", id=f"d{i}",
                  written=(now - timedelta(days=30 * i)).date().isoformat(),
                  meta={"act": "observation"}) for i in range(MAX_ITEMS + 1)]
    oldest = notes[-1].id
    notes = notes[::-1]  # the oldest first in the file: order alone would keep it
    monkeypatch.setenv("MEMSIFT_NOW", now.isoformat())
    _, decision = _run(project, notes, "celery redis broker retries capped")
    ids = [i for i, _ in _added(decision)]
    assert len(ids) == MAX_ITEMS and oldest not in ids


def test_sixty_days_stale_facts_never_return_rules_always_do_trivia_fades(tmp_path):
    terraform = set(horizon._TERRAFORM_ASKS)
    judge = WordJudge(kinds={text: "action" for text in terraform})
    result = horizon.replay(tmp_path / "home", horizon.DAYS, None,  # consolidation by words
                            judge=judge, store=MemoryStore([]), embedder=BAG)
    assert result["notes_kept"] == result["notes_written"]  # fading never deletes
    for subject, (added, asks) in result["stale_added_after_correction"].items():
        assert asks > 0 and added == 0, subject
    assert sum(added for added, _ in result["current_fact_added"].values()) > 0
    for rule, (added, asks) in result["rules_added_on_subject"].items():
        assert asks > 0 and added == asks, rule
    assert result["rules_added_off_subject"] == 0
    assert result["trivia_below_every_used_decision"] == len(result["trivia_r"]) == 4
    assert result["reinforced"] > 0 and result["weakened"] == 1  # the day-18 outdated note
    unused = min(result["unused_decision_r"].values())
    assert all(r > unused for r in result["used_decisions_r"].values())
