"""Commands: import, search, demo."""

from __future__ import annotations

import json
from pathlib import Path

import click


def _project(project: str | None) -> Path:
    from memsift.paths import git_root_via_git

    folder = Path(project or ".").expanduser().resolve()
    if not folder.is_dir():
        raise click.BadParameter(f"{folder} is not a folder", param_hint="--project")
    return git_root_via_git(str(folder)) or folder


def _settings():
    from memsift.config import ConfigError, load_settings

    try:
        return load_settings()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--project", metavar="DIR", help="The project (its git root); default: here.")
def import_command(file: Path, project: str | None) -> None:
    """Load a benchmark FILE's `notes` into the project's notes (ids and dates kept) and its
    `memory` into the long-term store."""
    from memsift.longterm import LongTermError
    from memsift.memory.importer import BenchFileError, import_data, load_bench_file

    root = _project(project)
    try:
        done = import_data(load_bench_file(file), _settings(), root)
    except (BenchFileError, LongTermError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{root}: {done.notes} notes added ({done.notes_total} in all), "
               f"{done.passages} passages added ({done.passages_total} in the long-term store)")


@click.command("search")
@click.argument("text")
@click.option("--project", metavar="DIR", help="The project (its git root); default: here.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def search_command(text: str, project: str | None, as_json: bool) -> None:
    """Search the notes and the long-term store for TEXT, score each candidate with the judge,
    and print what would be kept."""
    from memsift.judge import JudgeError
    from memsift.longterm import LongTermError
    from memsift.prompt.search import search

    try:
        rows = search(text, _settings(), _project(project))
    except (JudgeError, LongTermError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps([{"id": i.id, "source": i.source, "score": round(i.score, 4),
                                "kept": kept, "written": i.written, "text": i.text}
                               for i, kept in rows], indent=2, ensure_ascii=False))
        return
    _print_rows(rows)


def _print_rows(rows) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Candidates, best first")
    for column in ("kept", "score", "source", "id", "written", "text"):
        table.add_column(column, overflow="fold")
    for item, kept in rows:
        table.add_row("yes" if kept else "", f"{item.score:.2f}", item.source, escape(item.id),
                      item.written, escape(item.text))
    Console().print(table if rows else "Nothing in memory for this project.")


@click.command("demo")
@click.option("--home", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the demo's memory here (default: a temporary folder, removed after).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows and the summary as JSON.")
def demo_command(home: Path | None, as_json: bool) -> None:
    """Replay a short sample session on a sample project through the real hook, and show per
    message its kind, what it should get, what memory added, the verdict and the wait."""
    from memsift.commands.demo_run import run_demo

    run_demo(home, as_json=as_json)


COMMANDS = [import_command, search_command, demo_command]
