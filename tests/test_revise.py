"""The line-patch applier, the history and the offline revision pass."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsift.memory.history import NothingToUndo, undo, versions
from memsift.memory.notes import Note, NotesFile, format_note, parse
from memsift.session_end.revise import (
    Patch,
    StalePatch,
    apply_patches,
    offline_patches,
    patch_file,
    patches_from_json,
)

# str.splitlines() also breaks on these; the notes format counts lines the same way
_BREAKS = "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_line_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=_BREAKS),
                     max_size=30)
_ending = st.sampled_from(["\n", "\r\n"])
_files = st.lists(st.tuples(_line_text, _ending), min_size=1, max_size=12)


def _content(lines, last_newline=True):
    text = "".join(t + e for t, e in lines)
    if last_newline or not lines[-1][0]:  # an empty last line needs its ending to exist
        return text
    return text[: -len(lines[-1][1])]


@st.composite
def file_and_patches(draw):
    lines = draw(_files)
    last_newline = draw(st.booleans())
    numbers = draw(st.lists(st.integers(1, len(lines)), unique=True, max_size=len(lines)))
    patches = [Patch(n, lines[n - 1][0], draw(st.none() | _line_text)) for n in numbers]
    return lines, last_newline, patches


@given(file_and_patches())
def test_lines_no_patch_names_stay_byte_for_byte(case):
    lines, last_newline, patches = case
    content = _content(lines, last_newline)
    revised = apply_patches(content, patches)
    named = {p.line: p for p in patches}
    expected = []
    for number, text in enumerate(content.splitlines(keepends=True), start=1):
        patch = named.get(number)
        if patch is None:
            expected.append(text)
        elif patch.new is not None:
            expected.append(patch.new + text[len(patch.old):])
    assert revised == "".join(expected)


@given(file_and_patches(), st.data())
def test_a_patch_set_with_one_stale_quote_is_refused_whole(case, data):
    lines, last_newline, patches = case
    if not patches:
        return
    content = _content(lines, last_newline)
    victim = data.draw(st.integers(0, len(patches) - 1))
    wrong = data.draw(_line_text.filter(lambda t: t != patches[victim].old))
    stale = list(patches)
    stale[victim] = Patch(stale[victim].line, wrong, stale[victim].new)
    with pytest.raises(StalePatch):
        apply_patches(content, stale)


def test_a_patch_outside_the_file_or_naming_a_line_twice_is_refused():
    with pytest.raises(StalePatch):
        apply_patches("a\n", [Patch(2, "", None)])
    with pytest.raises(StalePatch):
        apply_patches("a\nb\n", [Patch(1, "a", "x"), Patch(1, "a", None)])
    with pytest.raises(StalePatch):
        apply_patches("a\n", [Patch(1, "a", "two\nlines")])


@settings(max_examples=40, deadline=None)
@given(st.lists(_files, min_size=1, max_size=4))
def test_undo_restores_the_exact_bytes_of_each_earlier_version(tmp_path_factory, contents):
    folder = tmp_path_factory.mktemp("undo")
    notes_file = NotesFile(folder / "notes.md")
    written = []
    for lines in contents:
        with notes_file_lock(notes_file):
            notes_file.write_locked(_content(lines))
        written.append(notes_file.path.read_bytes())
    for earlier in reversed(written[:-1]):
        undo(notes_file.path)
        assert notes_file.path.read_bytes() == earlier
    undo(notes_file.path)
    assert not notes_file.path.exists()
    with pytest.raises(NothingToUndo):
        undo(notes_file.path)


def notes_file_lock(notes_file):
    from memsift.fsutil import file_lock

    return file_lock(notes_file.lock_path)


def test_patch_file_refuses_a_set_made_before_someone_else_edited(tmp_path):
    notes_file = NotesFile(tmp_path / "notes.md")
    notes_file.append([Note("Use Postgres for the importer."), Note("Run ruff before commit.")])
    content = notes_file.read_text()
    second = content.splitlines()[3]
    patch = Patch(4, second, None)
    notes_file.append([Note("A third note.")])
    edited = notes_file.read_text().replace("Run ruff", "Run ruff and mypy")
    with notes_file_lock(notes_file):
        notes_file.write_locked(edited)
    assert patch_file(notes_file, [patch]) is False
    assert notes_file.read_text() == edited


def test_model_patches_are_read_from_json_and_malformed_ones_rejected():
    patches = patches_from_json({"patches": [{"line": 3, "old": "x", "new": None}]})
    assert patches == [Patch(3, "x", None)]
    with pytest.raises(TypeError):
        patches_from_json({"patches": [{"line": "3", "old": "x", "new": None}]})


def _fake_embed(groups):
    """Vectors by hand for a unit test of the merge rules (the real model is tested below)."""
    import numpy as np

    def embed(texts):
        rows = [np.asarray(groups[t], dtype=np.float32) for t in texts]
        return np.stack([r / np.linalg.norm(r) for r in rows])

    return embed


def test_near_duplicates_merge_keeping_the_newer_wording_and_history_keeps_the_older(tmp_path):
    older = Note("Use Postgres, SQLite locks with several writers.", written="2024-05-01")
    newer = Note("Postgres, because SQLite locks under concurrent writers.", written="2024-06-01")
    other = Note("Release from CI tags only.", written="2024-05-02")
    notes_file = NotesFile(tmp_path / "notes.md")
    notes_file.append([older, other, newer])
    before = notes_file.read_text()
    embed = _fake_embed({older.text: [1, 0.1, 0], newer.text: [1, 0.12, 0], other.text: [0, 0, 1]})
    from memsift.session_end.revise import offline_pass

    assert offline_pass(notes_file, fresh=[newer.text], embed=embed) == 1
    texts = [n.text for n in notes_file.read()]
    assert texts == [other.text, newer.text]
    assert versions(notes_file.path)[-1].read_bytes() == before.encode()


def test_a_later_correction_supersedes_the_older_note(tmp_path):
    older = Note("The importer uses Celery for the email jobs.", id="n1", written="2024-05-01")
    newer = Note("The importer switched from Celery to RQ for email jobs.", written="2024-06-01")
    content = "# memsift notes\n\n" + format_note(older) + "\n" + format_note(newer) + "\n"
    embed = _fake_embed({older.text: [1, 0.6, 0], newer.text: [1, 0, 0]})
    patches = offline_patches(content, embed=embed)
    revised = parse(apply_patches(content, patches))
    assert [n.text for n in revised] == [newer.text]
    assert revised[0].meta["supersedes"] == "n1"


def test_unrelated_notes_are_left_alone_by_the_offline_pass():
    a, b = Note("Use Postgres.", written="2024-05-01"), Note("Never push on Fridays.")
    content = format_note(a) + "\n" + format_note(b) + "\n"
    assert offline_patches(content, embed=_fake_embed({a.text: [1, 0], b.text: [0, 1]})) == []


def test_the_real_embedding_merges_a_paraphrase_but_not_a_different_decision():
    notes = [
        Note("Use Postgres for the importer because SQLite locks with several writers.",
             written="2024-05-01"),
        Note("Never run migrations after the seed step in the deploy script.",
             written="2024-05-02"),
        Note("Use Postgres for the importer, since SQLite locks with several writers.",
             written="2024-06-01"),
    ]
    content = "".join(format_note(n) + "\n" for n in notes)
    patches = offline_patches(content)
    assert [(p.line, p.new) for p in patches] == [(1, None)]
