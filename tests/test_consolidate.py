"""memsift.memory.consolidate and `memsift consolidate`: the files behind memory that lives."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner

from memsift.audit import Decision, ItemRecord, write_decision
from memsift.cli import cli
from memsift.config import load_settings
from memsift.events import Turn
from memsift.memory import consolidate as cons
from memsift.memory import lifecycle as lc
from memsift.memory.notes import Note, NotesFile, notes_path

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)
NOTES = [
    Note("Staging host is 10.0.2.5, deploy with ssh deploy@10.0.2.5", id="h1",
         written="2026-01-02"),
    Note("Revenue backfills go through the backfill_revenue DAG, one day per run", id="b1",
         written="2026-01-05"),
    Note("Kafka staging models dedupe on partition and offset", id="d1", written="2026-01-06"),
    Note("Actually the staging host moved from 10.0.2.5 to 10.0.3.12", id="h2",
         written="2026-01-20"),
    Note("Kafka staging models dedupe on partition and offset.", id="d2", written="2026-02-01"),
]


def _project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    settings = load_settings()
    notes_file = NotesFile(notes_path(settings, root))
    notes_file.append(NOTES)
    return root, settings, notes_file


def test_consolidate_supersedes_and_merges_without_deleting_or_rewriting_text(tmp_path):
    root, settings, notes_file = _project(tmp_path)
    before = notes_file.read_text()
    report = cons.consolidate(root, settings, NOW, similarity_for=None)
    assert report.superseded == [{"new": "h2", "old": "h1"}]
    assert report.merged == [{"new": "d2", "old": "d1"}]
    after = notes_file.read()
    assert [n.text for n in after] == [n.text for n in NOTES]
    by_id = {n.id: n for n in after}
    assert by_id["h1"].meta["superseded_by"] == "h2" and by_id["h2"].meta["supersedes"] == "h1"
    assert [n.id for n in lc.visible(after)] == ["b1", "h2", "d2"]
    assert len(before.splitlines()) == len(notes_file.read_text().splitlines())
    assert report.visible == 3 and report.notes == 5


def test_consolidate_twice_changes_nothing_more(tmp_path):
    root, settings, notes_file = _project(tmp_path)
    cons.consolidate(root, settings, NOW, similarity_for=None)
    content = notes_file.read_text()
    again = cons.consolidate(root, settings, NOW, similarity_for=None)
    assert again.merged == [] and again.superseded == []
    assert notes_file.read_text() == content


def test_lines_that_are_not_notes_stay_byte_for_byte(tmp_path):
    root, settings, notes_file = _project(tmp_path)
    text = notes_file.read_text().replace("# memsift notes", "# Riverbed  notes\n\nprose line ")
    notes_file.write_locked(text)
    cons.consolidate(root, settings, NOW, similarity_for=None)
    assert "# Riverbed  notes\n\nprose line \n" in notes_file.read_text()


def test_history_shows_what_replaced_what(tmp_path):
    root, settings, _ = _project(tmp_path)
    cons.consolidate(root, settings, NOW, similarity_for=None)
    rows = cons.history(root, settings)
    assert {(r["old"], r["new"], r["reason"]) for r in rows} == {
        ("h1", "h2", "supersedes"), ("d1", "d2", "duplicate")}


def _session(settings, root, added_id, message):
    write_decision(Decision(project=str(root), session="s1", time="2026-02-28T10:00:00+00:00",
                            kind="past_choice", prompt_chars=len(message),
                            added=[ItemRecord(added_id, "notes", 0.9)]),
                   settings.paths.audit_file)


def test_a_note_added_and_built_on_gains_stability_once(tmp_path):
    root, settings, _ = _project(tmp_path)
    message = "how do I backfill march?"
    _session(settings, root, "b1", message)
    turns = [Turn("user", message), Turn("assistant", "Running backfill_revenue one day per run."),
             Turn("user", "great, keep going")]
    assert cons.record_session(root, settings, "s1", turns) == 1
    assert cons.record_session(root, settings, "s1", turns) == 0  # a rerun queues nothing
    report = cons.consolidate(root, settings, NOW, similarity_for=None)
    assert report.reinforced == ["b1"]
    state = cons.note_states(settings, root)
    seeded = lc.initial_stability(lc.note_salience(NOTES[1]))
    assert state["b1"]["s"] == round(seeded * lc.USE_GAIN, 3)
    assert cons.consolidate(root, settings, NOW, similarity_for=None).reinforced == []


def test_a_note_added_and_contradicted_loses_stability(tmp_path):
    root, settings, _ = _project(tmp_path)
    message = "how do I backfill march?"
    _session(settings, root, "b1", message)
    turns = [Turn("user", message), Turn("assistant", "Use backfill_revenue, one day per run."),
             Turn("user", "no, that's outdated: backfill_revenue was retired last month")]
    cons.record_session(root, settings, "s1", turns)
    report = cons.consolidate(root, settings, NOW, similarity_for=None)
    assert report.weakened == ["b1"]
    assert cons.note_states(settings, root)["b1"]["s"] < lc.initial_stability(
        lc.note_salience(NOTES[1]))


def test_notes_not_added_do_not_change_even_if_mentioned(tmp_path):
    root, settings, _ = _project(tmp_path)
    message = "how do I backfill march?"
    _session(settings, root, "h1", message)  # the audit says h1 was added, not b1
    turns = [Turn("user", message), Turn("assistant", "Use backfill_revenue, one day per run."),
             Turn("user", "ok")]
    assert cons.record_session(root, settings, "s1", turns) == 0
    assert cons.note_states(settings, root) == {}


def test_maybe_consolidate_runs_at_most_once_a_day(tmp_path):
    root, settings, _ = _project(tmp_path)
    assert cons.maybe_consolidate(root, settings, NOW) is not None
    assert cons.maybe_consolidate(root, settings, NOW + timedelta(hours=23)) is None
    assert cons.maybe_consolidate(root, settings, NOW + timedelta(hours=25)) is not None


def test_a_broken_state_file_is_rebuilt_not_fatal(tmp_path):
    root, settings, _ = _project(tmp_path)
    path = cons.state_path(settings, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert cons.consolidate(root, settings, NOW, similarity_for=None).notes == 5
    assert json.loads(path.read_text())["v"] == cons.STATE_VERSION


def test_faded_notes_are_reported_and_kept(tmp_path):
    root, settings, notes_file = _project(tmp_path)
    notes_file.append([Note("where is the lint config? in pyproject", id="t1",
                            written="2024-01-01", meta={"act": lc.ROUTINE})])
    report = cons.consolidate(root, settings, NOW, similarity_for=None)
    assert "t1" in report.faded and "b1" not in report.faded
    assert any(n.id == "t1" for n in notes_file.read())


def test_consolidate_command_prints_json_report(tmp_path, monkeypatch):
    root, _, _ = _project(tmp_path)
    monkeypatch.setenv("MEMSIFT_NOW", NOW.isoformat())
    result = CliRunner().invoke(cli, ["consolidate", "--project", str(root), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["superseded"] == [{"new": "h2", "old": "h1"}]
    assert report["time"].startswith("2026-03-01")
    human = CliRunner().invoke(cli, ["consolidate", "--project", str(root)])
    assert human.exit_code == 0 and "on the prompt path" in human.output
