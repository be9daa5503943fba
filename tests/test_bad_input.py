"""Bad input everywhere: a clear message, nothing lost. A notes file that is not UTF-8, a
transcript that cannot be read, a full disk (a real file size limit in a child process)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.word_judge import WordJudge, hash_embedder

from memsift.config import load_settings
from memsift.events import Event
from memsift.fsutil import append_line
from memsift.longterm.local import LocalStore
from memsift.memory.notes import Note, NotesFile, notes_path
from memsift.paths import get_paths
from memsift.prompt.cascade import run_prompt

PROMPT = "why do staging model names use a double underscore"
NOTE = "Staging model names use a double underscore between source and table."
CORRUPT = ("# notes\n\n- " + NOTE + "\n").encode() + b"- caf\xe9 au lait \xff\n"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "riverbed"
    (root / ".git").mkdir(parents=True)
    return root


def prompt(project: Path, transcript: str = "") -> str:
    event = Event(host="claude-code", name="UserPromptSubmit", session_id="s1",
                  cwd=str(project), prompt=PROMPT, transcript_path=transcript)
    settings = load_settings()
    embed_fn, model_id = hash_embedder()
    store = LocalStore.for_project(settings, project, embed_fn, model_id)  # empty
    return run_prompt(event, settings, judge=WordJudge(), store=store,
                      embedder=(embed_fn, model_id)).context


def test_a_notes_file_that_is_not_utf8_is_kept_aside_and_still_read(project):
    path = notes_path(load_settings(), project)
    path.parent.mkdir(parents=True)
    path.write_bytes(CORRUPT)
    notes = NotesFile(path).read()
    assert notes[0].text == NOTE and "caf\ufffd au lait" in notes[1].text
    [copy] = path.parent.glob("notes.md.corrupt-*")
    assert copy.read_bytes() == CORRUPT
    NotesFile(path).read()
    assert len(list(path.parent.glob("notes.md.corrupt-*"))) == 1  # once per content
    NotesFile(path).append([Note("A new note written after the damage.")])
    assert copy.read_bytes() == CORRUPT  # never overwritten
    assert "A new note written" in path.read_text(encoding="utf-8")
    assert "kept aside" in get_paths().log_file.read_text()


def test_the_prompt_path_still_uses_a_damaged_notes_file(project):
    path = notes_path(load_settings(), project)
    path.parent.mkdir(parents=True)
    path.write_bytes(CORRUPT)
    assert NOTE in prompt(project)


def test_an_unreadable_transcript_costs_the_conversation_filter_only(project, tmp_path):
    NotesFile(notes_path(load_settings(), project)).append([Note(NOTE)])
    folder_not_file = tmp_path / "transcript.jsonl"
    folder_not_file.mkdir()
    assert NOTE in prompt(project, str(folder_not_file))
    assert "transcript cannot be read" in get_paths().log_file.read_text()


def test_a_short_write_leaves_no_half_line(tmp_path):
    """Under a file size limit the append fails whole: the log stays line-aligned."""
    path = tmp_path / "audit.jsonl"
    append_line(path, json.dumps({"n": 1}))
    size = path.stat().st_size
    script = (
        "import resource, signal, sys; from pathlib import Path;"
        "from memsift.fsutil import append_line;"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN);"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({size + 10}, {size + 10}));"
        "p = Path(sys.argv[1])\n"
        "try:\n    append_line(p, 'x' * 50)\nexcept OSError as e:\n    print('refused', e.errno)"
    )
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.startswith("refused")
    assert path.read_text() == '{"n": 1}\n'


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_the_hook_on_a_full_disk_exits_0_and_loses_nothing(project, isolated_env):
    """Every file memsift would grow is at its size limit: the hook adds nothing or what it
    found, exits 0, and leaves the notes and the audit log as they were."""
    settings = load_settings()
    NotesFile(notes_path(settings, project)).append([Note(NOTE)])
    audit = settings.paths.audit_file
    append_line(audit, json.dumps({"project": str(project), "kind": "earlier"}))
    log = settings.paths.log_file
    append_line(log, "earlier log line")
    before = {p: p.read_bytes() for p in (audit, notes_path(settings, project))}
    limit = max(p.stat().st_size for p in (*before, log))
    payload = json.dumps({"session_id": "s1", "cwd": str(project), "prompt": PROMPT,
                          "hook_event_name": "UserPromptSubmit", "transcript_path": ""})
    done = subprocess.run(
        [sys.executable, "-m", "memsift", "hook", "claude-code", "UserPromptSubmit"],
        input=payload.encode(), capture_output=True, timeout=120, check=False,
        env=dict(os.environ), preexec_fn=_limit_file_size(limit),
    )
    assert done.returncode == 0
    assert not done.stdout or isinstance(json.loads(done.stdout), dict)
    for path, data in before.items():
        assert path.read_bytes() == data
    assert log.read_text().splitlines()[0] == "earlier log line"


@pytest.fixture
def full_disk(tmp_path):
    """A real 256 KiB tmpfs, filled to the last byte (needs root and mount rights; skipped
    where a container forbids mounts: the file size limit test above covers that case)."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs",
                              str(mount_point)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


def _fill(folder: Path) -> None:
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (4096, 1):  # whole pages, then the last bytes
            while True:
                try:
                    if os.write(fd, b"\0" * size) < size:
                        break
                except OSError:
                    break
    finally:
        os.close(fd)


def test_the_hook_on_a_really_full_disk_exits_0_and_loses_nothing(project, full_disk,
                                                                  monkeypatch):
    monkeypatch.setenv("MEMSIFT_HOME", str(full_disk / "home"))
    settings = load_settings()
    NotesFile(notes_path(settings, project)).append([Note(NOTE)])
    append_line(settings.paths.audit_file, json.dumps({"project": str(project)}))
    before = {p: p.read_bytes() for p in (settings.paths.audit_file, notes_path(settings, project))}
    _fill(full_disk)
    payload = json.dumps({"session_id": "s1", "cwd": str(project), "prompt": PROMPT,
                          "hook_event_name": "UserPromptSubmit", "transcript_path": ""})
    done = subprocess.run(
        [sys.executable, "-m", "memsift", "hook", "claude-code", "UserPromptSubmit"],
        input=payload.encode(), capture_output=True, timeout=120, check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 0
    assert not done.stdout or isinstance(json.loads(done.stdout), dict)
    for path, data in before.items():  # what was there is still there, whole lines only
        now = path.read_bytes()
        assert now.startswith(data) and now.endswith(b"\n")
    for line in settings.paths.audit_file.read_text().splitlines():
        json.loads(line)
    assert b"No space left" in done.stderr  # the log could not be written: stderr has it
