"""The training data is written apart from the benchmark files that judge it: no message,
note or fact copies one word for word or reworded (memsift.training.apart)."""

from pathlib import Path

import pytest

from memsift.training import apart

DEV = Path(__file__).resolve().parents[2] / "shared" / "bench" / "dev"
HELD = ["should reminders be on by default when someone adds a plant?",
        "scrolling the reminder list stutters and the pictures take ages to show up",
        "thanks"]


def _found(*texts: str, allowed: list[str] | None = None) -> list[apart.Overlap]:
    return apart.overlaps([("t.json", t) for t in texts], HELD, allowed or [])


def test_a_held_message_word_for_word_is_reported():
    (found,) = _found("Should reminders be on by default when someone adds a plant")
    assert found.held == HELD[0] and found.runs == ()


def test_a_reworded_copy_sharing_runs_is_reported_and_one_everyday_phrase_is_not():
    (found,) = _found("on the pixel the feed scrolling stutters and the pictures take ages to load")
    assert found.held == HELD[1] and len(found.runs) >= apart.MIN_RUNS
    assert _found("honestly the pictures take ages to show") == []  # one run of six
    assert _found("thanks", "Thanks!") == []  # every session's reactions


def test_an_allowed_entry_covers_the_runs_it_holds():
    text = "the feed stutters and the pictures take ages to show"
    assert _found(text)
    assert _found(text, allowed=["stutters and the pictures take ages to show"]) == []


def test_the_allowed_file_reads_entries_without_comments(tmp_path):
    path = tmp_path / "allowed.txt"
    path.write_text("# whose words\nOne of RECEIVER_EXPORTED or RECEIVER_NOT_EXPORTED\n")
    assert apart.allowed_runs(path) == ["one of receiver exported or receiver not exported"]


def test_labels_and_replies_are_not_content():
    row = {"why": "summary of this conversation", "turns": [{"user": "u", "assistant": "a"}],
           "kept": {"3": "a fact"}}
    assert list(apart.strings(row)) == ["u", "a fact"]


@pytest.mark.skipif(not DEV.is_dir(), reason="the benchmark's dev files sit beside the repo")
def test_nothing_trained_on_copies_the_dev_files():
    found = apart.check([DEV])
    assert found == [], "\n".join(f"{o.source}: {o.text[:80]!r} ~ {o.held[:80]!r}" for o in found)
