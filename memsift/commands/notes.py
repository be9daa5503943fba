"""Commands: notes (list, show, edit, undo, history)."""

from __future__ import annotations

from pathlib import Path

import click

PROJECT_HELP = "The project (its git root); default: here."


def _project(project: str | None) -> Path:
    from memsift.paths import git_root_via_git, project_root

    folder = Path(project or ".").expanduser().resolve()
    if not folder.is_dir():
        raise click.BadParameter(f"{folder} is not a folder", param_hint="--project")
    return git_root_via_git(str(folder)) or project_root(folder)


def _notes_file(project: str | None):
    from memsift.config import ConfigError, load_settings
    from memsift.memory.notes import NotesFile, notes_path

    try:
        settings = load_settings()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    return NotesFile(notes_path(settings, _project(project)))


@click.group("notes")
def notes_group() -> None:
    """The project's notes: what memsift remembers, one note a line."""


@notes_group.command("list")
@click.option("--project", metavar="DIR", help=PROJECT_HELP)
def list_command(project: str | None) -> None:
    """Print each note as a row: line number, date, id, source (host:session:turn it was kept
    from; - for a note written by hand or imported) and text."""
    notes = _notes_file(project).read()
    if not notes:
        click.echo("no notes yet")
        return
    rows = [(str(n.line), n.written or "-", n.key, n.meta.get("source") or "-") for n in notes]
    header = ("line", "written", "id", "source")
    widths = [max(len(r[i]) for r in [*rows, header]) for i in range(len(header))]
    click.echo(_row(header, widths) + "  text")
    for row, note in zip(rows, notes):
        click.echo(_row(row, widths) + f"  {note.text}")


def _row(cells, widths) -> str:
    line, *rest = cells
    return "  ".join([line.rjust(widths[0]), *(c.ljust(w) for c, w in zip(rest, widths[1:]))])


@notes_group.command("show")
@click.option("--project", metavar="DIR", help=PROJECT_HELP)
@click.option("--version", "version", type=int, metavar="N",
              help="Show the earlier version N (see `memsift notes history`).")
def show_command(project: str | None, version: int | None) -> None:
    """Print the notes file as it is, or an earlier version of it."""
    from memsift.memory.history import versions

    notes_file = _notes_file(project)
    if version is None:
        click.echo(notes_file.read_text(), nl=False)
        return
    for entry in versions(notes_file.path):
        if entry.seq == version:
            click.echo(entry.read_bytes().decode("utf-8"), nl=False)
            return
    raise click.ClickException(f"no version {version}; see `memsift notes history`")


@notes_group.command("edit")
@click.option("--project", metavar="DIR", help=PROJECT_HELP)
def edit_command(project: str | None) -> None:
    """Open the notes in $EDITOR; the version before the edit is kept for undo."""
    from memsift.fsutil import file_lock

    notes_file = _notes_file(project)
    before = notes_file.read_text()
    after = click.edit(before or "# memsift notes\n\n", extension=".md", require_save=True)
    if after is None or after == before:
        click.echo("no change")
        return
    with file_lock(notes_file.lock_path):
        if notes_file.read_text() != before:
            raise click.ClickException("the notes changed while you edited; edit again")
        notes_file.write_locked(after)
    click.echo(f"saved {notes_file.path}")


@notes_group.command("undo")
@click.option("--project", metavar="DIR", help=PROJECT_HELP)
def undo_command(project: str | None) -> None:
    """Put back the notes as they were before the last change, byte for byte."""
    from memsift.memory.history import NothingToUndo, undo

    notes_file = _notes_file(project)
    try:
        version = undo(notes_file.path)
    except NothingToUndo as exc:
        raise click.ClickException(str(exc)) from exc
    state = "no notes file" if version.absent else f"the notes of {version.stamp}"
    click.echo(f"restored version {version.seq} ({state})")


@notes_group.command("history")
@click.option("--project", metavar="DIR", help=PROJECT_HELP)
def history_command(project: str | None) -> None:
    """List the earlier versions kept, newest first, with how many notes each held."""
    from memsift.memory.history import versions
    from memsift.memory.notes import parse

    notes_file = _notes_file(project)
    entries = versions(notes_file.path)
    if not entries:
        click.echo("no earlier versions")
        return
    for entry in reversed(entries):
        count = len(parse(entry.read_bytes().decode("utf-8", errors="replace")))
        label = "(no file)" if entry.absent else f"{count} notes"
        click.echo(f"{entry.seq:>6}  {entry.stamp}  {label}")


COMMANDS = [notes_group]
