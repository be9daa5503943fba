"""The prompt cascade: each step's stop condition, budgets, the conversation filter."""

from __future__ import annotations

import json
import time

import pytest
from fakes.memory import BAG, MemoryStore, SleepyJudge, WordJudge

from memsift.audit import read_audit
from memsift.config import load_settings
from memsift.events import Event
from memsift.longterm.base import Passage
from memsift.memory.notes import Note, NotesFile, notes_path
from memsift.prompt.cascade import run_prompt
from memsift.prompt.render import CLOSE_TAG, OPEN_TAG

NOTE = Note("Staging model names use a double underscore: stg_billing__invoices.", id="n03",
            written="2024-06-12")
PASSAGE = Passage("m07", "The nightly export job writes parquet files to the archive bucket.",
                  written="2025-01-21")
ASK_NOTE = "staging model names with double underscore, how?"
ASK_PASSAGE = "nightly export job parquet files: which archive bucket?"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    NotesFile(notes_path(load_settings(), root)).append([NOTE])
    return root


def _event(project, prompt, transcript=""):
    return Event(host="claude-code", name="UserPromptSubmit", session_id="s1",
                 cwd=str(project), prompt=prompt, transcript_path=str(transcript))


def _run(project, prompt, judge=None, store=None, transcript="", **settings):
    store = store if store is not None else MemoryStore([PASSAGE])
    result = run_prompt(_event(project, prompt, transcript), load_settings(settings),
                        judge=judge or WordJudge(), store=store, embedder=BAG)
    (decision,) = read_audit(1)
    return result.context, decision


def _steps(decision):
    return {s["name"]: s["result"] for s in decision["steps"]}


def test_a_no_search_kind_adds_nothing_and_asks_nothing_else(project):
    judge = WordJudge(kinds={ASK_NOTE: "action"})
    store = MemoryStore([PASSAGE])
    context, decision = _run(project, ASK_NOTE, judge, store)
    assert context == ""
    assert _steps(decision)["kind"] == "no-search"
    assert judge.calls == ["kind"] and store.searches == 0


def test_a_note_that_answers_is_added_with_its_pointer(project):
    context, decision = _run(project, ASK_NOTE)
    assert context.startswith(OPEN_TAG) and context.endswith(CLOSE_TAG)
    assert "[note n03, written 2024-06-12]" in context
    assert "check critical facts in the code" in context
    assert [a["id"] for a in decision["added"]] == ["n03"]
    assert decision["chars"] == len(context)


def test_a_sure_note_answer_skips_the_long_term_search(project):
    store = MemoryStore([PASSAGE])
    _, decision = _run(project, "staging model names double underscore", store=store)
    assert store.searches == 0
    assert _steps(decision)["worth"] == "skipped: notes answered"


def test_a_subject_not_worth_keeping_stops_before_the_search(project):
    store = MemoryStore([PASSAGE])
    context, decision = _run(project, ASK_PASSAGE, WordJudge(worth=0.05), store)
    assert context == "" and store.searches == 0
    assert _steps(decision)["worth"] == "no"


def test_a_passage_that_answers_comes_from_the_long_term_store(project):
    context, decision = _run(project, ASK_PASSAGE)
    assert "[memory m07, written 2025-01-21]" in context
    assert [(a["id"], a["source"]) for a in decision["added"]] == [("m07", "longterm")]


def test_an_unrelated_message_gets_nothing(project):
    context, decision = _run(project, "how would pagination work for the reports endpoint?")
    assert context == "" and decision["chars"] == 0
    assert _steps(decision)["render"] == "nothing"


def test_a_store_that_is_down_costs_only_its_step(project):
    context, decision = _run(project, ASK_PASSAGE, store=MemoryStore([PASSAGE], fail="refused"))
    assert context == ""
    assert _steps(decision)["longterm"] == "refused"
    assert decision["errors"] and decision["errors"][0].startswith("longterm: refused")


def test_a_hanging_store_is_cut_off_at_its_deadline(project):
    store = MemoryStore([PASSAGE], delay=3.0)
    begin = time.monotonic()
    context, decision = _run(project, ASK_PASSAGE, store=store, **{"budget.search_s": 0.3})
    took = time.monotonic() - begin
    assert context == "" and _steps(decision)["longterm"] == "timeout"
    assert took < 1.5  # not the store's 3 s


def test_a_slow_judge_is_cut_off_and_the_prompt_goes_on_unchanged(project):
    judge = SleepyJudge("kind", 3.0)
    begin = time.monotonic()
    context, decision = _run(project, ASK_NOTE, judge, **{"budget.prompt_s": 0.4})
    assert time.monotonic() - begin < 1.5
    assert context == "" and _steps(decision)["kind"] == "timeout"
    assert decision["errors"] == ["kind: timeout"]


def test_each_slow_step_is_cut_at_its_own_budget_inside_the_prompt_budget(project):
    judge = SleepyJudge("score", 5.0)
    begin = time.monotonic()
    context, decision = _run(project, ASK_PASSAGE, judge, **{"budget.prompt_s": 2.0,
                                                               "llm.base_url": "http://x"})
    assert time.monotonic() - begin < 2.3
    steps = _steps(decision)
    assert steps["notes"] == "timeout" and steps["passages"] == "timeout"
    assert steps["longterm"] == "1 found"  # the step between still ran
    assert OPEN_TAG not in context  # no memory; a one-line notice that the LLM is paused
    assert "paused" in context and len(context.splitlines()) == 1


def _transcript(tmp_path, *turns):
    path = tmp_path / "t.jsonl"
    lines = []
    for role, text in turns:
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(json.dumps({"type": role, "message": {"role": role, "content": content}}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_item_the_conversation_already_holds_is_dropped(project, tmp_path):
    transcript = _transcript(
        tmp_path, ("user", "naming?"),
        ("assistant", "Staging model names use a double underscore, like stg_billing__invoices."),
        ("user", ASK_NOTE))
    context, decision = _run(project, ASK_NOTE, transcript=transcript)
    assert context == ""
    assert _steps(decision)["conversation"] == "1 dropped, 0 given before"


def test_an_answer_given_early_in_the_session_is_still_held_many_turns_later(project, tmp_path):
    chatter = [turn for n in range(20)
               for turn in (("user", f"step {n}: rename the helper"), ("assistant", "Done."))]
    transcript = _transcript(
        tmp_path, ("user", "naming?"),
        ("assistant", "Staging model names use a double underscore, like stg_billing__invoices."),
        *chatter, ("user", ASK_NOTE))
    context, decision = _run(project, ASK_NOTE, transcript=transcript)
    assert context == ""
    assert _steps(decision)["conversation"] == "1 dropped, 0 given before"


def test_only_the_tail_of_a_very_long_session_counts_as_held(project, tmp_path):
    from memsift.prompt.conversation import TAIL_CHARS

    filler = [("user", "x" * 1000), ("assistant", "y" * 1000)] * (TAIL_CHARS // 2000 + 2)
    transcript = _transcript(
        tmp_path, ("user", "naming?"),
        ("assistant", "Staging model names use a double underscore, like stg_billing__invoices."),
        *filler, ("user", ASK_NOTE))
    context, _ = _run(project, ASK_NOTE, transcript=transcript)
    assert "[note n03" in context


def test_an_item_already_given_in_this_session_is_not_given_again(project):
    first, _ = _run(project, ASK_NOTE)
    again, decision = _run(project, ASK_NOTE)
    assert "[note n03" in first and again == ""
    assert _steps(decision)["notes"].endswith("1 given before")


def test_a_note_given_before_does_not_stop_the_search_for_a_passage(project):
    ask = "staging model names double underscore"
    other = Passage("m09", "Staging model names double underscore rule came from the dbt style guide.")
    first, _ = _run(project, ask, store=MemoryStore([other]))
    store = MemoryStore([other])
    again, decision = _run(project, ask, store=store)
    assert "[note n03" in first and store.searches == 1
    assert "[memory m09" in again and "[note n03" not in again
    assert _steps(decision)["worth"] != "skipped: notes answered"


def test_the_message_itself_does_not_count_as_already_held(project, tmp_path):
    prompt = "staging model names use a double underscore like stg_billing__invoices, right?"
    transcript = _transcript(tmp_path, ("user", prompt))
    context, _ = _run(project, prompt, transcript=transcript)
    assert "[note n03" in context


def test_an_empty_message_adds_nothing(project):
    judge = WordJudge()
    context, decision = _run(project, "   ", judge)
    assert context == "" and judge.calls == []
    assert _steps(decision)["kind"] == "empty"


def test_a_paused_long_term_service_is_not_called(project):
    from memsift.services.health import Health

    settings = load_settings({"cognee.url": "http://127.0.0.1:9"})
    Health.for_settings(settings).pause("longterm")
    store = MemoryStore([PASSAGE])
    result = run_prompt(_event(project, ASK_PASSAGE), settings, judge=WordJudge(), store=store,
                        embedder=BAG)
    (decision,) = read_audit(1)
    assert store.searches == 0 and OPEN_TAG not in result.context
    assert _steps(decision)["longterm"] == "skipped: longterm paused"


def test_an_item_that_names_none_of_the_messages_names_is_left_out(project):
    store = MemoryStore([Passage("d1", "Caroline went to the support group on the 7th of May."),
                         Passage("d2", "Melanie painted a lake at sunrise last May.")])
    judge = WordJudge()
    context, _ = _run(project, "Where did Nate go on the 7th of May, a support group?", judge,
                      store)
    assert context == ""  # close wording, but about Caroline, not Nate
    context, _ = _run(project, "Where did Caroline go on the 7th of May, a support group?",
                      judge, store)
    assert "[memory d1" in context


def test_a_chat_line_of_the_other_speaker_or_one_that_only_asks_is_left_out(project):
    store = MemoryStore([
        Passage("d1", "1:36 pm on 3 July, 2023, Melanie: Thanks, Caroline! Yeah, I made this "
                      "black and white bowl in my pottery class."),
        Passage("d2", "1:36 pm on 3 July, 2023, Caroline: Wow, Mel! Did you make that black "
                      "and white bowl in pottery class?"),
        Passage("d3", "2:10 pm on 9 July, 2023, Caroline: I made a black and white bowl in my "
                      "pottery class too, for my mum."),
    ])
    judge = WordJudge()
    question = "Did Caroline make a black and white bowl in pottery class?"
    context, _ = _run(project, question, judge, store)
    assert "[memory d3" in context  # her own line
    assert "[memory d1" not in context  # Melanie's bowl: Caroline is only greeted
    assert "[memory d2" not in context  # Caroline asks; she says nothing of her own bowl
    context, _ = _run(project, "Did Melanie make a black and white bowl in pottery class?",
                      judge, MemoryStore([store.passages["d1"], store.passages["d2"]]))
    assert "[memory d1" in context and "[memory d2" not in context


def test_whose_news_a_chat_line_is():
    from memsift.prompt.conversation import about_another_speaker, may_answer, only_asks, speaker

    line = ("10:37 am on 27 June, 2023, Caroline: Thanks, Melanie! This necklace is from my "
            "grandma.")
    both = {"caroline", "melanie"}
    assert speaker(line) == {"caroline"}
    assert about_another_speaker(line, {"melanie"}, both)  # greeted, not spoken of
    assert not about_another_speaker(line, {"caroline"}, both)  # her own news
    assert not about_another_speaker(line, {"melanie"}, {"caroline"})  # Melanie never speaks
    addressed = "10:40 am on 27 June, 2023, Caroline: Melanie, your necklace is lovely."
    told = "10:41 am on 27 June, 2023, Caroline: I told Melanie about the necklace."
    assert not about_another_speaker(addressed, {"melanie"}, both)
    assert not about_another_speaker(told, {"melanie"}, both)
    assert not about_another_speaker("Postgres: chosen for multi-row transactions.",
                                     {"mongo"}, {"postgres", "mongo"})  # not a chat line
    assert only_asks("6:55 pm on 20 October, 2023, Caroline: Wow, Mel! How did they handle it?")
    assert not only_asks("6:55 pm on 20 October, 2023, Melanie: They were scared but we "
                         "reassured them. Fine now?")
    assert not only_asks("Migrations: should we squash them?")  # not a chat line
    assert not may_answer(line, {"melanie"}, both) and may_answer(line, {"caroline"}, both)
    assert may_answer("Postgres: chosen for multi-row transactions.", set(), set())


def test_names_are_capitalised_words_inside_a_sentence():
    from memsift.prompt.conversation import names

    assert names("When did Caroline visit Paris? What did I say") == {"caroline", "paris"}
    assert names("what should the staging model be called, stg_events?") == set()


class PreparedJudge(WordJudge):
    """A judge that can score on two threads at once (it has `prepare`, as the local one
    does); the notes' scoring takes a while, and every call is logged with its time."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.log: list[tuple[str, float]] = []

    def prepare(self, message):
        self.log.append(("prepare", time.monotonic()))

    def score(self, message, items, deadline=None):
        scores = super().score(message, items, deadline)
        if any("double underscore" in i for i in items):
            time.sleep(0.2)
            self.log.append(("notes scored", time.monotonic()))
        return scores


class TimedStore(MemoryStore):
    def search(self, query, top_k, deadline):
        self.started = time.monotonic()
        return super().search(query, top_k, deadline)


def test_with_a_judge_that_can_the_passages_are_searched_and_judged_beside_the_notes(project):
    judge, store = PreparedJudge(), TimedStore([PASSAGE])
    context, _ = _run(project, ASK_PASSAGE, judge, store)
    assert "[memory m07" in context
    (prepared, _), (scored, at) = judge.log
    assert prepared == "prepare" and scored == "notes scored"
    assert store.started < at  # the search began while the notes were still being judged


def test_a_sure_note_answer_drops_the_passages_judged_beside_it(project):
    store = TimedStore([Passage("m08", "staging model names: see the dbt style guide")])
    context, decision = _run(project, "staging model names double underscore",
                             PreparedJudge(), store)
    assert _steps(decision)["worth"] == "skipped: notes answered"
    assert "n03" in context and "m08" not in context
    assert [a["id"] for a in decision["added"]] == ["n03"]


class EvenJudge(WordJudge):
    """Scores every item 0.6 at a threshold of 0.5, its kind read into its scores; with or
    without a passage share of its own."""

    scores_read_the_kind = True

    def __init__(self, share=None) -> None:
        super().__init__()
        self.share = share

    def score(self, message, items, deadline=None):
        return [0.6] * len(items)

    def passage_share(self):
        return self.share


def test_a_passage_needs_the_judges_own_share_above_its_threshold_and_the_line_says_so(project):
    _, default = _run(project, ASK_PASSAGE, EvenJudge())
    _, stated = _run(project, ASK_PASSAGE, EvenJudge(share=0.0))  # n03: given before now
    assert {a["id"] for a in default["added"]} == {"n03"}  # m07's 0.6 under 0.5 + 0.5 * 0.25
    assert {a["id"] for a in stated["added"]} == {"m07"}
    bars = {(j["id"], j["bar"]) for j in default["judged"]}
    assert bars == {("n03", 0.5), ("m07", 0.625)}
