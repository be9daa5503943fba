"""The offline judge: kinds, item scores, worth keeping, the generic question."""

from __future__ import annotations

import numpy as np
import pytest

from memsift.clock import Deadline
from memsift.config import load_settings
from memsift.judge import get_judge
from memsift.judge.base import KINDS, SEARCH_KINDS, JudgeError, needs_search
from memsift.judge.features import kind_features, pair_features, worth_features
from memsift.judge.local import HEADS_FILE, LocalJudge, rule_kind
from memsift.model.embed import DIM, embed


@pytest.fixture(scope="module")
def judge():
    return LocalJudge()


def top(probs: dict[str, float]) -> str:
    return max(probs, key=probs.get)


@pytest.mark.parametrize("message", ["thanks", "ok", "LGTM!", "looks good to me", "👍", ""])
def test_bare_reactions_are_ruled_reactions(message):
    assert rule_kind(message) == "reaction"


@pytest.mark.parametrize("message", ["commit this", "run the tests", "push it",
                                     "ok commit and push", "rerun ci"])
def test_bare_actions_on_the_work_are_ruled_actions(message):
    assert rule_kind(message) == "action"


def test_rules_leave_longer_messages_to_the_head():
    assert rule_kind("ok, and why did we choose kafka for the events?") is None


def test_kind_probabilities_cover_the_eleven_kinds_and_sum_to_one(judge):
    probs = judge.kind("why did we store sessions in redis and not in postgres?")
    assert set(probs) == set(KINDS)
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(("message", "kind"), [
    ("why did we end up choosing rabbitmq over nats for the job queue?", "past_choice"),
    ("the docker build is failing again with that same openssl error", "recurring"),
    ("what's the difference between a process pool and a thread pool?", "general"),
    ("let's continue with the stripe webhook work from yesterday", "resume"),
])
def test_head_recognises_clear_cases_it_was_not_trained_on(judge, message, kind):
    assert top(judge.kind(message)) == kind


def test_search_mass_separates_memory_questions_from_self_contained_ones(judge):
    assert needs_search(judge.kind("remind me why we chose gRPC for the internal api")) > 0.5
    assert needs_search(judge.kind("add a docstring to the parse_args function")) < 0.5


NOTE = ("Session store: Redis with a one-day TTL on every key, chosen over Postgres because "
        "logins spike at 9am and the db was the bottleneck.")
SAME_SUBJECT = "Redis runs as a single node with 4 GB of memory on staging."
UNRELATED = "The Android app's minimum SDK is 24 because of the camera API."
QUESTION = "why did we put the sessions in redis?"


def test_the_answering_note_scores_above_same_subject_and_unrelated_ones(judge):
    answer, same, other = judge.score(QUESTION, [NOTE, SAME_SUBJECT, UNRELATED])
    assert answer > same > other
    assert all(0.0 <= s <= 1.0 for s in (answer, same, other))
    assert answer >= judge.threshold() > other


def test_score_of_no_items_is_empty(judge):
    assert judge.score(QUESTION, []) == []


def test_score_vectors_gives_the_same_scores_from_cached_vectors(judge):
    items = [NOTE, SAME_SUBJECT, UNRELATED]
    cached = embed(items)
    from_vectors = judge.score_vectors(judge.embed_message(QUESTION), cached, QUESTION, items)
    assert from_vectors == pytest.approx(judge.score(QUESTION, items), abs=1e-5)


def test_shared_identifiers_raise_the_pair_features():
    with_ids = pair_features(0.5, "why does parse_config fail?", "parse_config needs a path")
    without = pair_features(0.5, "why does parse_config fail?", "the loader needs a path")
    assert with_ids[2] > without[2]


def test_a_choice_with_its_reason_is_worth_keeping_and_thanks_is_not(judge):
    keep = judge.worth_keeping("We use Dramatiq instead of Celery because Celery lost tasks "
                               "when workers restarted.")
    assert keep > 0.5 > judge.worth_keeping("thanks, that works")


def test_choose_prefers_the_option_that_fits_the_context(judge):
    probs = judge.choose("which area is this about?", ["database indexes", "mobile push"],
                         "the query on orders by customer is slow, add an index?")
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-5)
    assert top(probs) == "database indexes"


def test_choose_without_options_is_refused(judge):
    with pytest.raises(JudgeError):
        judge.choose("anything?", [], "context")


def test_a_spent_deadline_raises_judge_error(judge):
    now = [0.0]
    deadline = Deadline(0.5, clock=lambda: now[0])
    now[0] = 1.0
    with pytest.raises(JudgeError):
        judge.kind("how should we shard the events table?", deadline)


def test_missing_heads_raise_judge_error(tmp_path):
    with pytest.raises(JudgeError):
        LocalJudge(heads_file=tmp_path / "nope.npz").kind("how should we shard the table?")


def test_default_settings_give_the_local_judge():
    judge = get_judge(load_settings())
    assert isinstance(judge, LocalJudge) and judge.name == "local"


def test_shipped_heads_fit_the_current_features():
    with np.load(HEADS_FILE) as heads:
        assert heads["kind_w"].shape == (DIM + len(kind_features("x")), len(KINDS))
        assert heads["worth_w"].shape == (DIM + len(worth_features("x")), 2)
        assert heads["pair_w"].shape == (len(pair_features(0.0, "a", "b")), 2)
        assert tuple(heads["kinds"]) == KINDS


def test_held_out_kind_accuracy_stays_above_its_floor():
    from memsift.bench.judge import kind_report

    report = kind_report()
    assert report["kind_accuracy"] >= 0.88 and report["search_accuracy"] >= 0.93
    assert set(SEARCH_KINDS) <= set(KINDS)


def test_batched_kinds_agree_with_one_at_a_time(judge):
    messages = ["thanks", "why did we pick sqs?", "the cron ran twice again"]
    for one, batched in zip([judge.kind(m) for m in messages], judge.kinds(messages)):
        assert batched == pytest.approx(one, abs=1e-4)


POSTGRES_WHY = "why did we pick postgres over mongo?"
POSTGRES_NOTES = [
    "Ledger store: Postgres, chosen for multi-row transactions.",
    ("Postgres is backed up nightly with pg_dump to the ledger backups bucket, and the "
     "dumps are kept for thirty days in the cold storage class before they expire."),
]


def test_a_short_answering_note_is_not_sunk_by_its_length(judge):
    short, long_unrelated = judge.score(POSTGRES_WHY, POSTGRES_NOTES)
    assert short > long_unrelated and judge.threshold() > long_unrelated


@pytest.mark.xfail(strict=True, reason=(
    "known loss (docs/decision-model.md): the cross-encoder trained without any benchmark "
    "text scores a choice's note under the bar when the question names the alternative "
    "the note leaves out"))
def test_a_choice_note_answers_a_question_that_names_the_alternative(judge):
    short, _ = judge.score(POSTGRES_WHY, POSTGRES_NOTES)
    assert short >= judge.threshold()
