"""`memsift status`, `log`, `pause`, `resume`, and a broken config file, through the CLI."""

from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner

from memsift.audit import Decision, ItemRecord, write_decision
from memsift.cli import cli
from memsift.config import load_settings
from memsift.hook import main as hook_main
from memsift.paths import get_paths
from memsift.services.health import Health


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def decide(project: str, kind: str = "builds_on", chars: int = 120, **extra) -> None:
    decision = Decision(project=project, session="s1", host="claude-code", kind=kind,
                        chars=chars, wait_ms=42.5, **extra)
    write_decision(decision, get_paths().audit_file)


def test_status_json_shows_a_paused_service_and_why():
    Health.for_settings(load_settings()).report_failure("longterm", "refused", "connect failed")
    data = json.loads(run("status", "--json").stdout)
    longterm = data["services"]["longterm"]
    assert (longterm["state"], longterm["reason"], longterm["by"]) == ("paused", "refused", "fault")
    assert data["services"]["llm"]["state"] == "ok"


def test_status_shows_the_outage_history_after_a_resume():
    health = Health.for_settings(load_settings())
    health.report_failure("llm", "auth")
    health.resume("llm")
    [outage] = json.loads(run("status", "--json").stdout)["outages"]
    assert (outage["service"], outage["reason"], outage["resumed_by"]) == ("llm", "auth", "user")


def test_status_shows_each_setting_with_its_source_and_masks_secrets(monkeypatch):
    monkeypatch.setenv("MEMSIFT_LLM_API_KEY", "sk-verysecretvalue")
    monkeypatch.setenv("MEMSIFT_BUDGET_CHARS", "800")
    config = json.loads(run("status", "--json").stdout)["config"]
    assert config["budget.chars"] == {"value": 800, "source": "env"}
    assert config["budget.prompt_s"]["source"] == "default"
    assert "verysecret" not in json.dumps(config)
    assert "verysecret" not in run("status").output


def test_status_counts_notes_and_long_term_items_per_project(tmp_path):
    root = tmp_path / "riverbed"
    root.mkdir()
    folder = get_paths().project_dir(root)
    (folder / "longterm").mkdir(parents=True)
    (folder / "notes.md").write_text("# notes\n\n- one\n- two\nprose\n")
    (folder / "longterm" / "passages.jsonl").write_text('{"id":"a"}\n{"id":"b"}\n{"id":"c"}\n')
    decide(str(root.resolve()))
    [project] = json.loads(run("status", "--json").stdout)["projects"]
    assert (project["root"], project["notes"], project["longterm"]) == (
        str(root.resolve()), 2, 3)


def test_status_lists_the_last_decisions():
    for kind in ("reaction", "builds_on", "resume"):
        decide("/src/app", kind=kind)
    decisions = json.loads(run("status", "-n", "2", "--json").stdout)["decisions"]
    assert [d["kind"] for d in decisions] == ["builds_on", "resume"]
    assert decisions[0]["wait_ms"] == 42.5 and decisions[0]["chars"] == 120


def test_status_prints_user_text_as_text_not_markup(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # no folding inside a cell
    decide("/src/[bold red]x[/bold red]", kind="[blink]k[/blink]",
           errors=["longterm: [red]boom[/red]"])
    output = run("status").output
    assert "[blink]k[/blink]" in output and "[red]boom[/red]" in output


def test_status_shows_the_bootstrap_state_when_the_launcher_wrote_one():
    data_dir = get_paths().data_dir
    data_dir.mkdir(parents=True)
    (data_dir / "bootstrap.json").write_text('{"python": "3.11", "ready": true}')
    assert json.loads(run("status", "--json").stdout)["bootstrap"] == {
        "python": "3.11", "ready": True}
    assert "bootstrap" in run("status").output.lower()


def test_log_shows_decisions_in_full_for_one_project(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    decide(str(app.resolve()), kind="resume",
           added=[ItemRecord("n04", "notes", 0.83, "2024-11-05")])
    decide("/elsewhere", kind="reaction")
    output = run("log", "--project", str(app)).output
    assert "resume" in output and "notes:n04" in output and "reaction" not in output
    lines = run("log", "-n", "5", "--json").output.splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["resume", "reaction"]


def test_log_keeps_the_wait_on_one_line_in_80_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    write_decision(Decision(project="/work/a-project-with-a-long-name", session="s1",
                            host="claude-code", kind="recurring_problem", chars=1200,
                            prompt_chars=99000, wait_ms=503.0, kind_p=0.91, search_p=0.87),
                   get_paths().audit_file)
    output = run("log").output
    assert all(len(line) <= 80 for line in output.splitlines())
    assert any("wait 503 ms" in line for line in output.splitlines())
    assert any("prompt 99000 chars, added 1200 chars" in line for line in output.splitlines())


def test_pause_for_a_time_and_resume():
    result = run("pause", "--for", "1h30m", "longterm")
    assert result.exit_code == 0 and "until" in result.output
    health = Health.for_settings(load_settings())
    pause = health.pause_of("longterm")
    assert pause is not None and pause.by == "user" and pause.until
    assert not health.is_paused("llm")
    assert "resumed" in run("resume").output
    assert not health.is_paused("longterm")


def test_pause_without_a_service_pauses_both():
    run("pause")
    health = Health.for_settings(load_settings())
    assert health.is_paused("longterm") and health.is_paused("llm")


def test_a_bad_duration_is_a_usage_error():
    result = CliRunner().invoke(cli, ["pause", "--for", "soon"])
    assert result.exit_code == 2 and "not a duration" in result.output


@pytest.fixture
def broken_config():
    path = get_paths().config_file
    path.parent.mkdir(parents=True)
    path.write_text('[llm]\nmodel = "a"\n[budget\nchars = 3\n')
    return path


def test_a_broken_config_file_is_one_clear_line_and_exit_1(broken_config):
    result = CliRunner().invoke(cli, ["status"])
    assert result.exit_code == 1
    assert str(broken_config) in result.output and "line 3" in result.output
    assert "Traceback" not in result.output
    assert broken_config.read_text().startswith("[llm]")  # the user's file is untouched


def test_the_hook_falls_back_to_defaults_on_a_broken_config_and_says_so(broken_config,
                                                                        monkeypatch):
    payload = json.dumps({"session_id": "s1", "cwd": "/tmp", "prompt": "hello",
                          "hook_event_name": "UserPromptSubmit", "transcript_path": ""})
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(payload.encode())))
    assert hook_main(["claude-code", "UserPromptSubmit"]) == 0
    log = get_paths().log_file.read_text()
    assert "config ignored, using defaults" in log and str(broken_config) in log


def _hook_stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_status_counts_bad_hook_input_with_its_last_time_and_why(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one line per problem, to read it back
    for garbage in (b'{"prompt": "unfinished', b"[1, 2]", b'{"prompt": "unfinished'):
        _hook_stdin(monkeypatch, garbage)
        assert hook_main(["claude-code", "UserPromptSubmit"]) == 0
    problems = json.loads(run("status", "--json").stdout)["problems"]
    assert problems["count"] == 3 and problems["last"]
    by_message = {p["message"]: p for p in problems["by_message"]}
    not_json = by_message["hook input is not valid JSON, nothing added"]
    assert not_json["count"] == 2 and not_json["level"] == "warning"
    assert "Unterminated string" in not_json["fields"]["error"]
    assert by_message["hook input is not a JSON object, nothing added"]["count"] == 1
    shown = run("status").output
    assert "Problems in the log: 3" in shown and "not valid JSON" in shown
    assert "Unterminated" in shown


def test_status_shows_a_hook_that_failed_and_the_launchers_warning(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    log = get_paths().log_file
    log.parent.mkdir(parents=True)
    log.write_text(
        '2026-11-20T14:07:00+00:00 ERROR pid=7 hook failed, nothing added '
        '{"error": "OSError: disk full", "argv": ["claude-code", "UserPromptSubmit"]}\n'
        "2026-11-20T14:07:01+00:00 INFO pid=7 an ordinary line\n"
        "2026-11-20T14:08:00+00:00 WARNING pid=8 launcher: an interpreter was found but does "
        'not run; memsift sets itself up in the background, nothing added meanwhile '
        '{"not_running": "/plugin/.venv/bin/python", "host": "claude-code"}\n')
    problems = json.loads(run("status", "--json").stdout)["problems"]
    assert problems["count"] == 2 and problems["last"] == "2026-11-20T14:08:00+00:00"
    failed = next(p for p in problems["by_message"] if p["message"].startswith("hook failed"))
    assert failed["level"] == "error" and failed["fields"]["error"] == "OSError: disk full"
    shown = run("status").output
    assert "disk full" in shown and "/plugin/.venv/bin/python" in shown


def test_status_has_no_problems_table_when_the_log_is_clean():
    assert json.loads(run("status", "--json").stdout)["problems"]["count"] == 0
    assert "Problems in the log" not in run("status").output
