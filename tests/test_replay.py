"""The replay benchmark: the real hook in fresh processes over a tiny conversation file, the
scoring rule, and the report's shape."""

from __future__ import annotations

import json
from pathlib import Path

from memsift.bench.replay import ConversationScore, TurnResult, added_context, main, percentile
from memsift.bench.scoring import items_added

DATA = Path(__file__).parent / "data"


def test_an_item_counts_as_added_when_most_of_its_long_words_are_there():
    catalogue = {"n01": "Money is stored as integer cents, never floats.",
                 "m01": "The settlement job takes an advisory lock."}
    assert items_added("- [note n01] money: stored as INTEGER cents (never floats)", catalogue) \
        == ["n01"]
    assert items_added("the settlement job", catalogue) == []  # 2 of 4 long words
    assert items_added("", catalogue) == []


def test_hook_output_in_either_claude_form_is_read():
    wrapped = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                      "additionalContext": "memory"}}
    assert added_context(json.dumps(wrapped)) == "memory"
    assert added_context("plain text\n") == "plain text"
    assert added_context("") == ""


def test_scores_follow_the_format():
    score = ConversationScore("f", "memsift", [
        TurnResult(1, "reaction", [], [], 0, 0.1),
        TurnResult(2, "past_choice", ["n01"], ["n01", "m09"], 300, 0.3),
        TurnResult(3, "resume", ["n02"], [], 0, 0.2, lost="below_bar"),
        TurnResult(4, "action", [], ["m01"], 120, 0.2),
        TurnResult(5, "resume", ["n03"], [], 0, 0.2),
    ]).summary()
    assert score["added"] == 2 and score["characters"] == 420
    assert (score["reminders_found"], score["expect_some"]) == (1, 3)
    assert (score["added_for_nothing"], score["expect_empty"]) == (1, 2)
    assert score["wrong_items"] == 2
    assert score["lost"] == {"dropped": 0, "below_bar": 1, "outranked": 0, "not_searched": 0,
                             "unknown": 1}
    assert score["wait_p95_s"] == 0.3 and percentile([], 95) == 0.0


def test_a_tiny_conversation_replays_through_the_real_hook_beside_the_baseline(capsys):
    report = main([str(DATA / "tiny_conversation.json")], baseline=True, as_json=True)
    printed = json.loads(capsys.readouterr().out)
    assert printed == report
    ours, theirs = report["conversations"]
    assert (ours["mode"], theirs["mode"]) == ("memsift", "baseline")
    assert ours["turns"] == theirs["turns"] == 2
    assert ours["added_for_nothing"] == 0  # "thanks" gets nothing
    assert theirs["added_for_nothing"] == 1  # the plugin searches every message of 5+ chars
    assert theirs["characters"] > ours["characters"]
    assert ours["wait_mean_s"] > 0 and "not reproduced" in report["note"]
    # every missed reminder says where its prompt's audit line lost it; the baseline judges none
    assert sum(ours["lost"].values()) == ours["expect_some"] - ours["reminders_found"]
    assert ours["lost"]["unknown"] == 0 and theirs["lost"] == {}


def test_a_retrieval_file_reports_evidence_and_silence():
    report = main([str(DATA / "tiny_retrieval.json")], as_json=True)
    (row,) = report["retrieval"]
    assert (row["answerable"], row["unanswerable"]) == (1, 1)
    assert 0 <= row["evidence_found"] <= 1 and 0 <= row["nothing_kept"] <= 1
    assert "in-process" in report["retrieval_note"]
