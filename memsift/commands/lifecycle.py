"""Commands: consolidate (merge, supersede, reinforce, report fading)."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("consolidate")
@click.option("--project", "project", type=click.Path(file_okay=False), default=".",
              show_default=True, help="The project (its git root is used).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def consolidate_command(project: str, as_json: bool) -> None:
    """Merge near-duplicate notes, let later corrections supersede older notes, apply
    reinforcement from past sessions, and report what changed and what has faded. Nothing is
    deleted: superseded notes stay in the file (see `memsift notes history`)."""
    from memsift.config import load_settings
    from memsift.memory.consolidate import consolidate
    from memsift.paths import project_root

    settings = load_settings()
    report = consolidate(project_root(Path(project)), settings)
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        return
    _print_report(report)


def _print_report(report) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    console.print(f"[bold]{escape(report.project)}[/] at {report.time}: {report.notes} notes, "
                  f"{report.visible} on the prompt path, {report.rules} rules "
                  f"(compared by {report.similarity})")
    for title, rows in (("merged", report.merged), ("superseded", report.superseded)):
        for row in rows:
            console.print(f"  {title}: {escape(row['old'])} -> {escape(row['new'])}")
    console.print(f"  reinforced: {len(report.reinforced)}  weakened: {len(report.weakened)}  "
                  f"faded (kept, ranked lower): {len(report.faded)}")


COMMANDS = [consolidate_command]
