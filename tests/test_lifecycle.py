"""memsift.memory.lifecycle: the pure rules of memory that lives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsift.memory import lifecycle as lc
from memsift.memory.notes import Note

NOW = datetime(2026, 3, 1, tzinfo=UTC)


# --- the forgetting curve ------------------------------------------------------------------------

@given(st.floats(min_value=0.01, max_value=10_000))
def test_recall_is_ninety_percent_after_exactly_one_stability(stability):
    assert lc.retrievability(stability, stability) == pytest.approx(0.9, abs=1e-9)


def test_recall_is_whole_at_time_zero_and_never_negative_time():
    assert lc.retrievability(0, 5) == 1.0
    assert lc.retrievability(-3, 5) == 1.0


@given(st.floats(min_value=0, max_value=5000), st.floats(min_value=0.01, max_value=5000),
       st.floats(min_value=0.001, max_value=100))
def test_recall_falls_with_time_and_rises_with_stability(days, stability, step):
    assert lc.retrievability(days + step, stability) < lc.retrievability(days, stability)
    assert lc.retrievability(days + step, stability + step) > lc.retrievability(
        days + step, stability)


def test_curve_never_reaches_zero_so_fading_never_deletes():
    assert 0 < lc.retrievability(100 * 365, lc.S_MIN) < 0.1


def test_stability_grows_with_salience_between_its_bounds():
    assert lc.initial_stability(0) == pytest.approx(lc.S_MIN)
    assert lc.initial_stability(1) == pytest.approx(lc.S_MAX)
    assert lc.initial_stability(0.3) < lc.initial_stability(0.6) < lc.initial_stability(0.9)


# --- acts and salience ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, act", [
    ("actually the staging host moved from 10.0.2.5 to 10.0.3.12", lc.CORRECTION),
    ("no, that's wrong: payments uses stripe-go v76 now", lc.CORRECTION),
    ("we no longer use requests, httpx everywhere", lc.CORRECTION),
    ("scratch that, we're not doing the redis cache", lc.RETRACTION),
    ("let's go with httpx for the client", lc.DECISION),
    ("we decided to keep the monorepo", lc.DECISION),
    ("I'll send the migration plan by friday", lc.COMMITMENT),
    ("where is the config file?", lc.ROUTINE),
    ("run the tests", lc.ROUTINE),
    ("The build takes 4 minutes on CI", lc.OBSERVATION),
])
def test_acts_are_classified_by_their_cues(text, act):
    assert lc.classify_act(text) == act


def test_user_correction_counts_most_and_routine_lookup_least():
    floors = {act: lc.act_floor(act, lc.USER) for act in lc.ACTS}
    assert max(floors, key=floors.get) == lc.CORRECTION
    assert min(floors, key=floors.get) == lc.ROUTINE
    assert floors[lc.CORRECTION] > floors[lc.DECISION] > floors[lc.OBSERVATION]


def test_user_correction_outranks_the_agent_taking_something_back():
    assert lc.act_floor(lc.CORRECTION, lc.USER) > lc.act_floor(lc.RETRACTION, lc.AGENT)
    for act in lc.ACTS:
        assert lc.act_floor(act, lc.USER) > lc.act_floor(act, lc.AGENT)


def test_salience_is_the_higher_of_floor_and_intensity():
    assert lc.salience(lc.ROUTINE, lc.USER, 0.0) == lc.act_floor(lc.ROUTINE)
    assert lc.salience(lc.ROUTINE, lc.USER, 0.85) == 0.85
    assert lc.salience(lc.CORRECTION, lc.USER, 0.2) == lc.act_floor(lc.CORRECTION)


TERSE = ["ok", "run the tests", "fine", "looks good", "push it"]
LOUD = ["WHY is this BROKEN!!", "FIX IT NOW!!", "ugh NEVER again!!!", "THIS is BAD!", "NO!!"]


def test_shouting_from_a_terse_user_is_a_spike():
    assert lc.intensity("NEVER push to main!!", lc.tone_baseline(TERSE)) == 1.0


def test_the_same_shout_from_a_user_who_always_shouts_is_normal():
    assert lc.intensity("NEVER push to main!!", lc.tone_baseline(LOUD)) < 0.2


def test_plain_message_has_no_intensity_and_one_exclamation_is_not_a_scream():
    terse = lc.tone_baseline(TERSE)
    assert lc.intensity("use the staging host", terse) == 0.0
    assert lc.intensity("use the staging host!", terse) < 0.5


def test_too_few_messages_fall_back_to_a_typical_writer():
    assert lc.tone_baseline(["hi"]) == lc.Baseline(*lc.DEFAULT_BASELINE)


def test_annotate_records_act_speaker_salience_and_rule():
    meta = lc.annotate("NEVER log card data!!", lc.USER, TERSE)
    assert meta["by"] == "user" and meta["rule"] == "1"
    assert float(meta["sal"]) == 1.0
    agent = lc.annotate("I was wrong about the port, it's 5433", lc.AGENT)
    assert agent["act"] == lc.RETRACTION and float(agent["sal"]) < 0.9


# --- ranking ---------------------------------------------------------------------------------------------

def test_retrievability_breaks_ties_between_equally_scored_notes():
    old = Note("staging host is 10.0.2.5", id="old", written="2025-01-01",
               meta={"act": lc.OBSERVATION})
    fresh = Note("deploys go through the release branch", id="fresh", written="2026-02-27",
                 meta={"act": lc.OBSERVATION})
    ranked = lc.rank([old, fresh], {"old": 0.81, "fresh": 0.8}, NOW)
    assert [n.id for n in ranked] == ["fresh", "old"]


def test_a_clearly_better_score_wins_over_recall():
    old = Note("a", id="old", written="2020-01-01")
    fresh = Note("b", id="fresh", written="2026-02-28")
    assert [n.id for n in lc.rank([fresh, old], {"old": 0.9, "fresh": 0.6}, NOW)] == [
        "old", "fresh"]


def test_reinforced_state_keeps_a_note_fresh():
    note = Note("the queue is SQS", id="q", written="2025-01-01", meta={"act": lc.OBSERVATION})
    stale = lc.note_retrievability(note, NOW)
    state = {"q": {"s": 400.0, "last": "2026-02-01"}}
    assert lc.note_retrievability(note, NOW, state) > 0.95 > stale


# --- supersession -----------------------------------------------------------------------------------

OLD_HOST = Note("Staging host is 10.0.2.5, deploy with ssh deploy@10.0.2.5", id="h1",
                written="2026-01-02", line=3)
NEW_HOST = Note("Actually the staging host moved from 10.0.2.5 to 10.0.3.12", id="h2",
                written="2026-01-20", line=9)


def test_a_later_correction_on_the_same_subject_supersedes():
    assert lc.find_links([OLD_HOST, NEW_HOST]) == [lc.Link("h2", "h1", "supersedes")]


def test_a_correction_on_another_subject_supersedes_nothing():
    other = Note("Actually the CI cache key includes the lockfile hash", id="c1",
                 written="2026-01-21")
    assert lc.find_links([OLD_HOST, other]) == []


def test_an_observation_on_the_same_subject_does_not_supersede():
    more = Note("Staging host 10.0.2.5 has 8 GB of memory", id="m1", written="2026-01-21")
    assert lc.find_links([OLD_HOST, more]) == []


def test_an_older_correction_never_supersedes_a_newer_note():
    early = Note("Actually the staging host moved from 10.0.1.1 to 10.0.2.5", id="e",
                 written="2025-12-01")
    links = lc.find_links([early, OLD_HOST])
    assert all(link.old != OLD_HOST.id for link in links)


def test_embedding_similarity_decides_when_given():
    new = Note("Correction: the payments client is stripe-go v76 now", id="p2",
               written="2026-02-01")
    old = Note("payments client pinned to stripe-go v72", id="p1", written="2025-06-01")
    assert lc.find_links([old, new], lambda a, b: 0.3) == []
    assert lc.find_links([old, new], lambda a, b: 0.8) == [lc.Link("p2", "p1", "supersedes")]


def test_superseded_notes_leave_the_prompt_path_either_way_it_is_recorded():
    old_marked = Note(OLD_HOST.text, id="h1", meta={"superseded_by": "h2"})
    assert [n.id for n in lc.visible([old_marked, NEW_HOST])] == ["h2"]
    new_marked = Note(NEW_HOST.text, id="h2", meta={"supersedes": "h1"})
    assert [n.id for n in lc.visible([OLD_HOST, new_marked])] == ["h2"]


def test_near_duplicates_are_linked_as_a_merge():
    a = Note("Kafka staging models dedupe on partition and offset", id="d1", written="2025-01-01")
    b = Note("Kafka staging models dedupe on partition and offset.", id="d2", written="2025-02-01")
    assert lc.find_links([a, b]) == [lc.Link("d2", "d1", "duplicate")]


def test_each_old_note_is_hidden_once_and_chains_follow_the_latest():
    third = Note("Actually the staging host moved from 10.0.3.12 to 10.0.4.7", id="h3",
                 written="2026-02-10", line=12)
    links = lc.find_links([OLD_HOST, NEW_HOST, third])
    assert lc.Link("h2", "h1", "supersedes") in links
    assert lc.Link("h3", "h2", "supersedes") in links
    assert len(links) == 2


# --- reinforcement ----------------------------------------------------------------------------------

DECISION_NOTE = Note("Revenue backfills go through the backfill_revenue DAG, one day per run",
                     id="b1")


def test_a_note_the_reply_builds_on_is_used():
    verdict = lc.usage(DECISION_NOTE, "how do I backfill march?",
                       "Triggering backfill_revenue one day per run for March.", "good, go on")
    assert verdict == lc.USED


def test_a_note_the_user_then_calls_outdated_is_contradicted():
    verdict = lc.usage(DECISION_NOTE, "how do I backfill march?",
                       "Triggering backfill_revenue one day per run for March.",
                       "no, that's outdated, backfill_revenue was retired")
    assert verdict == lc.CONTRADICTED


def test_a_note_nobody_used_is_left_alone():
    assert lc.usage(DECISION_NOTE, "how do I backfill march?", "Which month exactly?",
                    "march 2025") is None


def test_words_the_prompt_already_had_do_not_count_as_use():
    verdict = lc.usage(DECISION_NOTE, "backfill_revenue DAG one day per run?",
                       "Yes, backfill_revenue DAG, one day per run.", "")
    assert verdict is None


def test_use_doubles_stability_and_contradiction_cuts_it():
    used = lc.apply_usage({"s": 10.0}, DECISION_NOTE, lc.USED, "2026-03-01")
    assert used["s"] == 20.0 and used["last"] == "2026-03-01" and used["used"] == 1
    hit = lc.apply_usage({"s": 40.0}, DECISION_NOTE, lc.CONTRADICTED, "2026-03-01")
    assert hit["s"] == 10.0 and hit["contradicted"] == 1
    assert lc.apply_usage({"s": 3.0}, DECISION_NOTE, lc.CONTRADICTED, "x")["s"] == lc.S_MIN


# --- rules ----------------------------------------------------------------------------------------------

FRIDAY = Note("Never apply terraform on a Friday", id="r1")
CARDS = Note("Never log card data, not even masked", id="r2")
TAGGED = Note("Prod deploys need two approvals, posted in the release channel", id="r3",
              meta={"rule": "1"})
PLAIN = Note("The terraform state lives in s3://infra-state", id="f1")


def test_rules_are_recognised_by_cue_or_flag():
    assert lc.is_rule(FRIDAY) and lc.is_rule(CARDS) and lc.is_rule(TAGGED)
    assert not lc.is_rule(PLAIN)
    assert not lc.is_rule(Note("Never apply terraform on a Friday", meta={"rule": "0"}))


def test_a_rule_is_added_when_its_subject_comes_up():
    notes = [FRIDAY, CARDS, TAGGED, PLAIN]
    assert lc.rules_for("ok, apply the terraform changes now", notes) == [FRIDAY]
    assert lc.rules_for("add debug logging of the card payload", notes) == [CARDS]
    assert lc.rules_for("ship the prod deploy, approvals are in", notes) == [TAGGED]
    assert lc.rules_for("log the card data of failed charges", notes) == [CARDS]


def test_a_rule_is_not_added_when_only_part_of_its_subject_comes_up():
    backfill = Note("Never run `airflow dags backfill` on dbt_daily. Revenue backfills go "
                    "through the backfill_revenue DAG.", id="n09")
    assert lc.rules_for("does it get its own DAG or ride along in dbt_daily?", [backfill]) == []
    assert lc.rules_for("run the dag tests", [backfill]) == []
    assert lc.rules_for("run sunday and monday with airflow dags backfill", [backfill]) == [
        backfill]


def test_no_rule_when_its_subject_is_absent():
    assert lc.rules_for("rename the button on the settings page", [FRIDAY, CARDS, TAGGED]) == []


def test_one_shared_word_needs_the_embedding_to_agree():
    assert lc.rules_for("terraform fmt please", [FRIDAY]) == []
    assert lc.rules_for("terraform fmt please", [FRIDAY], similarity=lambda n: 0.6) == [FRIDAY]


def test_rules_stay_within_their_share_of_the_budget():
    long_rule = Note("Never log card data " + "x" * 400, id="big")
    chosen = lc.rules_for("log the card data", [long_rule, CARDS], budget_chars=100)
    assert chosen == [CARDS]
    assert lc.rules_budget(1200) == int(1200 * lc.RULES_SHARE)


def test_a_superseded_rule_is_not_added():
    old = Note("Never apply terraform on a Friday", id="r1", meta={"superseded_by": "r9"})
    assert lc.rules_for("apply terraform", [old]) == []
