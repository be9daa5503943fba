"""The offline note: the fact from the sentences that carry it, without the question or the
filler, in one line."""

from __future__ import annotations

from memsift.session_end.extract import compose_fact, sentences


def test_the_fact_after_a_filler_opening_is_kept_and_the_opening_dropped():
    note = compose_fact(
        "restart with 256/4. can it resume or start over?",
        "Nothing recorded, but it can resume: upserts are keyed by product_id, so rewriting "
        "is harmless, and the job takes --resume-from with the last offset.")
    assert note.startswith("It can resume")
    assert "--resume-from" in note and "Nothing recorded" not in note
    assert "can it resume or start over" not in note


def test_a_reply_that_is_filler_through_and_through_has_no_sentence():
    assert sentences("Nothing recorded. No note on that. Sure.") == []
    assert sentences("Nothing decided yet: ask Maya.") == []  # too little after the filler
    assert sentences("I don't have anything recorded on that, and there's no CODEOWNERS entry "
                     "for infra/snowflake.") == []
    assert sentences("I can't find a recorded reason.") == []


def test_the_question_is_not_the_note_when_the_reply_states_the_choice():
    note = compose_fact(
        "Should the importer keep SQLite or move to Postgres?",
        "Move to Postgres: SQLite serialises writers and the four workers hit 'database is "
        "locked' every night.")
    assert note.startswith("Move to Postgres") and "?" not in note
    assert len(note) <= 300


def test_what_follows_a_dropped_done_and_stands_alone():
    note = compose_fact("set format: avro for it in topics.yaml",
                        "Done, and the config loader test now includes an avro topic.")
    assert note == "The config loader test now includes an avro topic."
    assert compose_fact("x", "Android and iOS both read it from config.json.").startswith(
        "Android and iOS")  # a sentence that opens with a word like "and" is left as it is


def test_a_short_go_ahead_and_a_found_it_opening_are_not_part_of_the_fact():
    note = compose_fact(
        "fix it, I bet the reminder adds 24h instead of a calendar day",
        "That was it: the scheduler added interval_days times 86,400,000 ms. It now adds "
        "calendar days in the reminder's zone with date-fns-tz.")
    assert note.startswith("I bet the reminder adds 24h instead of a calendar day")
    assert "fix it" not in note.lower() and "That was it" not in note
    assert "date-fns-tz" in note
