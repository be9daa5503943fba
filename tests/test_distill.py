"""Session end: which exchanges become notes, idempotence, redaction, the LLM path."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from fakes.openai_server import FAKE_MODEL, json_reply, probs_reply, text_reply

from memsift.config import load_settings
from memsift.memory.history import versions
from memsift.memory.notes import NotesFile, notes_path
from memsift.paths import project_root
from memsift.session_end.distill import process_session, state_path
from memsift.session_end.keepers import MAX_NOTE_CHARS

DECISION = (
    "Should the importer keep SQLite or move to Postgres?",
    ("Move to Postgres. SQLite serialises writers, and the importer runs four workers that "
    "write at once, so we hit 'database is locked' every night. I changed the engine in "
    "app/db.py and kept SQLite only for the unit tests."),
)
REACTION = ("thanks, that works", "Glad it helped!")
UI_TWEAK = ("make the submit button blue", "Changed the button colour to the primary blue.")
INCIDENT = (
    "The nightly export keeps getting OOM-killed",
    ("It loaded the whole export into memory before writing. The fix was to stream rows in "
    "chunks of 1000; memory stays under 200 MB now."),
)
AWS_KEY = "AKIAQ7ZX3M5N8P2R4T6V"
SECRET_EXCHANGE = (
    "The deploy fails with AccessDenied, the key is " + AWS_KEY,
    "The fix was to give the deploy role s3:PutObject; the failing key " + AWS_KEY
    + " belongs to the old CI user, and postgres://ci:Hunt3rPass99@db.internal/app must "
    "never be used by the deploy because that user is read-only.",
)


def write_transcript(path: Path, exchanges, *, start: int = 0) -> None:
    """A Claude Code transcript: one JSON line per turn, plus lines the reader skips."""
    lines = [] if start else [{"type": "system", "content": "session started"}]
    for user, reply in exchanges:
        lines.append({"type": "user", "message": {"role": "user", "content": user},
                      "timestamp": "2024-06-12T10:00:00Z"})
        lines.append({"type": "assistant", "message": {
            "role": "assistant", "model": "claude", "content": [
                {"type": "tool_use", "name": "Bash", "input": {}},
                {"type": "text", "text": reply}]}})
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


def append_line(path: Path, line: dict) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def job(project: Path, transcript: Path, session: str = "s1", event: str = "Stop") -> dict:
    return {"host": "claude-code", "session_id": session, "transcript_path": str(transcript),
            "cwd": str(project), "event": event}


def project_notes(project: Path) -> NotesFile:
    return NotesFile(notes_path(load_settings(), project_root(project)))


def test_a_decision_and_an_incident_become_short_dated_notes_with_their_source(tmp_path,
                                                                                monkeypatch):
    monkeypatch.setenv("MEMSIFT_NOW", "2024-06-12T10:00:00Z")
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [DECISION, REACTION, UI_TWEAK, INCIDENT])
    outcome = process_session(job(tmp_path, transcript), load_settings())
    notes = project_notes(tmp_path).read()
    assert outcome["kept"] == 2
    assert [n.meta["source"] for n in notes] == ["claude-code:s1:0", "claude-code:s1:6"]
    assert all(n.written == "2024-06-12" and len(n.text) <= MAX_NOTE_CHARS for n in notes)
    assert "Postgres" in notes[0].text and "writers" in notes[0].text
    assert "stream rows" in notes[1].text
    assert {"act", "by", "sal"} <= set(notes[1].meta)
    assert "Should the importer" not in notes[0].text  # the fact, never the question


def test_stop_then_session_end_and_reruns_add_each_note_once(tmp_path):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [DECISION])
    settings = load_settings()
    process_session(job(tmp_path, transcript), settings)
    process_session(job(tmp_path, transcript, event="Stop"), settings)
    write_transcript(transcript, [REACTION, INCIDENT], start=1)
    second = process_session(job(tmp_path, transcript, event="SessionEnd"), settings)
    third = process_session(job(tmp_path, transcript, event="SessionEnd"), settings)
    assert second["exchanges"] == 2 and third["exchanges"] == 0
    assert len(project_notes(tmp_path).read()) == 2


def test_a_crash_after_the_notes_were_written_does_not_double_them(tmp_path):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [DECISION, INCIDENT])
    settings = load_settings()
    process_session(job(tmp_path, transcript), settings)
    state_path(settings, project_root(tmp_path), "s1").unlink()  # the state write was lost
    again = process_session(job(tmp_path, transcript), settings)
    assert again["kept"] == 0
    assert len(project_notes(tmp_path).read()) == 2


def test_an_unanswered_last_message_waits_for_its_reply(tmp_path):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [DECISION])
    append_line(transcript, {"type": "user", "message": {"role": "user", "content": INCIDENT[0]}})
    settings = load_settings()
    process_session(job(tmp_path, transcript), settings)
    append_line(transcript, {"type": "assistant", "message": {
        "role": "assistant", "model": "claude", "content": INCIDENT[1]}})
    process_session(job(tmp_path, transcript), settings)
    assert len(project_notes(tmp_path).read()) == 2


def test_no_secret_reaches_the_notes_offline(tmp_path):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [SECRET_EXCHANGE])
    process_session(job(tmp_path, transcript), load_settings())
    content = project_notes(tmp_path).read_text()
    assert "[REDACTED:" in content
    assert AWS_KEY not in content and "Hunt3rPass99" not in content


def _llm_settings(monkeypatch, server):
    monkeypatch.setenv("MEMSIFT_LLM_BASE_URL", server.url)
    monkeypatch.setenv("MEMSIFT_LLM_MODEL", FAKE_MODEL)
    return load_settings()


def test_with_an_llm_it_asks_once_per_exchange_and_the_model_writes_the_note(
        tmp_path, monkeypatch, openai_server):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [SECRET_EXCHANGE, REACTION])
    written = ("Deploy role needs s3:PutObject; the old CI key " + AWS_KEY
               + " is read-only, never use it for deploys.")
    openai_server.script(probs_reply({"A": 0.9, "B": 0.1}), text_reply(written),
                         probs_reply({"A": 0.05, "B": 0.95}),
                         json_reply({"patches": []}))
    settings = _llm_settings(monkeypatch, openai_server)
    outcome = process_session(job(tmp_path, transcript, event="SessionEnd"), settings)
    assert outcome["kept"] == 1
    sent = json.dumps([r.body for r in openai_server.chat_requests()])
    assert len(openai_server.chat_requests()) == 4  # two questions, one note, one revision
    assert AWS_KEY not in sent and "Hunt3rPass99" not in sent
    assert "[REDACTED:aws_access_key]" in sent
    note = project_notes(tmp_path).read()[0]
    assert note.text.startswith("Deploy role needs s3:PutObject")
    assert AWS_KEY not in note.text  # the model echoed it; the note is redacted again


def test_the_llm_revision_applies_current_patches_and_keeps_the_old_version(
        tmp_path, monkeypatch, openai_server):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [DECISION])
    process_session(job(tmp_path, transcript), load_settings())  # offline first
    notes_file = project_notes(tmp_path)
    before = notes_file.read_text()
    line = before.splitlines()[2]
    new = re.sub(r"^- .*? <!--", "- Postgres for the importer: SQLite locks with 4 writers. <!--",
                 line)
    write_transcript(transcript, [REACTION], start=1)
    openai_server.script(probs_reply({"B": 0.9, "A": 0.1}),
                         json_reply({"patches": [{"line": 3, "old": line, "new": new}]}))
    settings = _llm_settings(monkeypatch, openai_server)
    outcome = process_session(job(tmp_path, transcript, event="SessionEnd"), settings)
    assert outcome["revised"] == 1
    assert notes_file.read_text() == before.replace(line, new)
    assert versions(notes_file.path)[-1].read_bytes() == before.encode()
    revision = openai_server.chat_requests()[-1].body
    assert revision["response_format"]["type"] == "json_schema"
    assert "3: " + line in revision["messages"][1]["content"]


def test_when_the_llm_is_down_the_offline_decision_keeps_the_exchange(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSIFT_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMSIFT_LLM_MODEL", "m")
    monkeypatch.setenv("MEMSIFT_LLM_TIMEOUT_S", "0.5")
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [DECISION, REACTION])
    outcome = process_session(job(tmp_path, transcript, event="Stop"), load_settings())
    assert outcome["kept"] == 1 and outcome["exchanges"] == 2


def test_session_end_after_stop_still_runs_the_llm_revision(tmp_path, monkeypatch,
                                                           openai_server):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [DECISION])
    process_session(job(tmp_path, transcript), load_settings())  # Stop kept the exchange
    notes_file = project_notes(tmp_path)
    line = notes_file.read_text().splitlines()[2]
    openai_server.script(json_reply({"patches": [{"line": 3, "old": line, "new": None}]}))
    settings = _llm_settings(monkeypatch, openai_server)
    outcome = process_session(job(tmp_path, transcript, event="SessionEnd"), settings)
    assert outcome["exchanges"] == 0 and outcome["revised"] == 1
    assert notes_file.read() == []


WORKER = """
import sys
from memsift.config import load_settings
from memsift.session_end.distill import process_session
job = {"host": "claude-code", "session_id": sys.argv[1], "transcript_path": sys.argv[2],
       "cwd": sys.argv[3], "event": "SessionEnd"}
outcome = process_session(job, load_settings())
print(outcome["kept"], outcome["added"])
"""


def test_several_workers_on_one_project_at_once_lose_no_note(tmp_path):
    sessions = []
    for number in range(4):
        transcript = tmp_path / f"t{number}.jsonl"
        topic = ("importer", "billing job", "upload service", "CRM sync")[number]
        decision = (DECISION[0].replace("importer", topic),
                    DECISION[1].replace("importer", topic) + f" Batch size {number + 1}00.")
        incident = (INCIDENT[0].replace("nightly export", topic),
                    INCIDENT[1] + f" Chunk {number}.")
        write_transcript(transcript, [decision, REACTION, incident])
        sessions.append((f"s{number}", transcript))
    processes = [subprocess.Popen([sys.executable, "-c", WORKER, sid, str(t), str(tmp_path)],
                                  stdout=subprocess.PIPE, text=True)
                 for sid, t in sessions]
    counts = [p.communicate(timeout=240)[0].split() for p in processes]
    assert all(p.returncode == 0 for p in processes)
    kept, added = (sum(int(c[i]) for c in counts) for i in (0, 1))
    sources = [n.meta["source"] for n in project_notes(tmp_path).read()]
    merged = len(versions(project_notes(tmp_path).path))  # every write kept a version
    assert merged >= 1
    assert kept == 8  # each session's decision and incident
    # a session that saw another's near-identical note reinforced it instead of writing it
    # again; every note a worker wrote is in the file or merged away, none lost
    assert added >= 4 and {s.split(":")[1] for s in sources} <= {"s0", "s1", "s2", "s3"}
    assert len(sources) + _merged_away(tmp_path) == added


def _merged_away(project: Path) -> int:
    """Notes the offline pass removed as near-duplicates (they stay in the history)."""
    kept = {n.meta["source"] for n in project_notes(project).read()}
    seen = set()
    for version in versions(project_notes(project).path):
        from memsift.memory.notes import parse

        seen |= {n.meta.get("source") for n in parse(version.read_bytes().decode())}
    return len(seen - kept - {None})


def _corpus_exchanges():
    """Each section of the redaction corpus as the assistant's reply to a question."""
    from test_redact import load_corpus

    text, secrets = load_corpus()
    sections = [s for s in text.split("\n## ") if s.strip() and not s.startswith("#")]
    return [(f"Why does the deploy need this config? Section {n}.",
             "The fix was to keep these settings because the deploy fails otherwise: " + body)
            for n, body in enumerate(sections)], secrets


def test_no_corpus_secret_reaches_the_notes_offline(tmp_path):
    exchanges, secrets = _corpus_exchanges()
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, exchanges)
    process_session(job(tmp_path, transcript), load_settings())
    content = project_notes(tmp_path).read_text()
    assert [s for s in secrets if s in content] == []


def test_no_corpus_secret_reaches_the_llm_or_its_notes(tmp_path, monkeypatch, openai_server):
    from fakes.openai_server import Reply, completion

    def answer(body):
        """Keep everything; as the note, echo the whole exchange back (the worst model)."""
        if body.get("response_format"):
            return json_reply({"patches": []})
        if body.get("max_tokens") == 1:
            return probs_reply({"A": 0.9, "B": 0.1})
        return Reply(body=completion(body["messages"][-1]["content"]))

    openai_server.on_chat = answer
    exchanges, secrets = _corpus_exchanges()
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, exchanges)
    settings = _llm_settings(monkeypatch, openai_server)
    outcome = process_session(job(tmp_path, transcript, event="SessionEnd"), settings)
    assert outcome["kept"] == len(exchanges)
    sent = json.dumps([r.body for r in openai_server.requests])
    content = project_notes(tmp_path).read_text()
    assert [s for s in secrets if s in sent] == []
    assert [s for s in secrets if s in content] == []
    assert sent.count("[REDACTED:") >= len(secrets)


def test_a_codex_rollout_is_distilled_the_same_way(tmp_path):
    rollout = tmp_path / "rollout.jsonl"
    lines = [{"type": "session_meta", "payload": {"id": "c1"}}]
    for role, kind, text in (("user", "input_text", DECISION[0]),
                             ("assistant", "output_text", DECISION[1]),
                             ("user", "input_text", REACTION[0]),
                             ("assistant", "output_text", REACTION[1])):
        lines.append({"timestamp": "2024-06-12T10:00:00Z", "type": "response_item", "payload": {
            "type": "message", "role": role, "content": [{"type": kind, "text": text}]}})
    rollout.write_text("".join(json.dumps(line) + "\n" for line in lines))
    codex_job = {"host": "codex", "session_id": "c1", "transcript_path": str(rollout),
                 "cwd": str(tmp_path), "event": "Stop"}
    assert process_session(codex_job, load_settings())["kept"] == 1
    assert [n.meta["source"] for n in project_notes(tmp_path).read()] == ["codex:c1:0"]


def test_no_corpus_secret_reaches_cognee_through_the_sync(tmp_path, monkeypatch):
    from fakes.cognee_server import FakeCognee

    exchanges, secrets = _corpus_exchanges()
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, exchanges)
    with FakeCognee() as cognee:
        monkeypatch.setenv("MEMSIFT_COGNEE_URL", cognee.url)
        process_session(job(tmp_path, transcript), load_settings())
        sent = [text for items in cognee.datasets.values() for text in items.values()]
    assert sent  # the notes did reach Cognee
    assert [s for s in secrets if any(s in text for text in sent)] == []


# -- judged with what the project holds -----------------------------------------------------

CENTS_NOTE = ("Invoice amounts are integer cents everywhere (amount_cents), never floats, "
              "because rounding broke the VAT totals.")
SQLITE_NOTE = "The importer writes to SQLite with a single worker."
RESTATES_CENTS = ("are invoice amounts floats or cents?",
                  ("Integer cents everywhere, in amount_cents: floats broke the VAT totals with "
                  "rounding, so never floats."))
CORRECTS_SQLITE = (("actually we moved the importer from SQLite to Postgres, it runs four workers "
                   "now"),
                   ("Right: the importer now writes to Postgres, because SQLite serialises "
                   "writers and the four workers hit 'database is locked'."))
INCIDENT_AGAIN = ("the export got OOM-killed again?",
                  ("Yes, same as before: it was loading everything; streaming rows in chunks of "
                  "1000 fixed it, memory under 200 MB."))
ONE_OFF = ("open the PR", "Opened #244.")
STATUS_AT_END = ("what's left before I can merge?",
                 ("It still needs Maya's approval, and the retry test for failed refunds is not "
                 "written yet."))


def _project_with_notes(tmp_path: Path, branch: str = "feat/invoices") -> Path:
    from memsift.memory.notes import Note

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    project_notes(project).append([Note(CENTS_NOTE, id="n01", written="2026-10-01"),
                                   Note(SQLITE_NOTE, id="n02", written="2026-10-01")])
    return project


def test_a_restated_note_is_reinforced_not_written_again(tmp_path):
    from memsift.memory import consolidate

    project = _project_with_notes(tmp_path)
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [RESTATES_CENTS, ONE_OFF])
    settings = load_settings()
    outcome = process_session(job(project, transcript), settings)
    assert outcome["added"] == 0 and outcome["reinforced"] == 1
    assert [n.key for n in project_notes(project).read()] == ["n01", "n02"]
    process_session(job(project, transcript), settings)  # a rerun reinforces nothing twice
    report = consolidate.consolidate(project_root(project), settings)
    assert report.reinforced == ["n01"]
    state = consolidate.note_states(settings, project_root(project))
    assert state["n01"]["used"] == 1


def test_a_correction_of_a_held_note_supersedes_it(tmp_path):
    from memsift.memory.lifecycle import visible

    project = _project_with_notes(tmp_path)
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [CORRECTS_SQLITE])
    outcome = process_session(job(project, transcript), load_settings())
    notes = project_notes(project).read()
    assert outcome["superseded"] == 1
    old = next(n for n in notes if n.key == "n02")
    new = next(n for n in notes if n.meta.get("supersedes") == "n02")
    assert old.meta["superseded_by"] == new.key and "Postgres" in new.text
    assert "n02" not in {n.key for n in visible(notes)}


def test_a_fact_the_session_says_twice_is_kept_once_and_one_off_actions_never(tmp_path):
    project = _project_with_notes(tmp_path)
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [INCIDENT, ONE_OFF, INCIDENT_AGAIN, REACTION])
    outcome = process_session(job(project, transcript), load_settings())
    written = [n for n in project_notes(project).read() if n.meta.get("source")]
    assert outcome["added"] == 1 and outcome["reinforced"] == 1
    assert "chunks of 1000" in written[0].text and "#244" not in written[0].text


def test_session_end_leaves_one_wip_note_that_replaces_the_branchs_last_one(tmp_path):
    from memsift.memory.lifecycle import visible

    project = _project_with_notes(tmp_path)
    settings = load_settings()
    first = tmp_path / "first.jsonl"
    write_transcript(first, [INCIDENT, STATUS_AT_END])
    assert process_session(job(project, first, "s1", "Stop"), settings).get("wip") is None
    assert process_session(job(project, first, "s1", "SessionEnd"), settings)["wip"] == 1
    second = tmp_path / "second.jsonl"
    write_transcript(second, [("and now?", ("Maya approved; next: the retry test for failed "
                                           "refunds, then open the PR."))])
    process_session(job(project, second, "s2", "SessionEnd"), settings)
    wips = [n for n in visible(project_notes(project).read()) if n.meta.get("wip")]
    assert len(wips) == 1 and wips[0].meta["wip"] == "feat/invoices"
    assert wips[0].text.startswith("WIP on feat/invoices:") and "retry test" in wips[0].text
    assert "Maya's approval" not in wips[0].text


def test_a_model_note_that_says_what_the_exchange_does_not_is_replaced_offline(
        tmp_path, monkeypatch, openai_server):
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [DECISION])
    invented = "Kubernetes autoscaling was tuned to 12 replicas after the Black Friday outage."
    openai_server.script(probs_reply({"A": 0.9, "B": 0.1}), text_reply(invented),
                         json_reply({"patches": []}))
    settings = _llm_settings(monkeypatch, openai_server)
    process_session(job(tmp_path, transcript, event="SessionEnd"), settings)
    note = project_notes(tmp_path).read()[0]
    assert "Kubernetes" not in note.text and "Postgres" in note.text


CAUSE = ("the nightly export died again, what happened?",
         ("It was OOM-killed: the exporter loads every row into memory before writing, and the "
          "table passed 40 million rows. Streaming rows in chunks of 1000 would keep it under "
          "200 MB. The database URL postgres://etl:Wint3rKey77@db.internal/app is in the log."))
FIX_IT = ("fix it", "Done: the export streams rows in chunks of 1000 now.")


def test_a_short_instruction_borrows_the_cause_from_the_reply_before_redacted(tmp_path):
    from memsift.hosts import adapter_for
    from memsift.session_end.exchange import exchanges, redacted
    from memsift.session_end.keepers import offline_note

    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, [CAUSE, FIX_IT])
    turns = adapter_for("claude-code").read_transcript(str(transcript))
    fix = redacted(exchanges(turns)[1])
    assert fix.before and "Wint3rKey77" not in str(fix.before)  # the pass reads it, redacted
    note = offline_note(fix)
    assert "OOM" in note or "into memory" in note  # the cause, from the reply before
    assert "chunks of 1000" in note and "Wint3rKey77" not in note
