"""The benchmark's output: a progress bar on stderr while it runs, then tables (or JSON)."""

from __future__ import annotations

import json
from typing import Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table


class Progress:
    """One bar over every turn and query of the run, on stderr (stdout carries the report)."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True,
                                 disable=not enabled)
        self._task = self._bar.add_task("replay", total=total)

    def __enter__(self) -> Self:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def describe(self, text: str) -> None:
        self._bar.update(self._task, description=text)

    def advance(self) -> None:
        self._bar.advance(self._task)


def print_report(report: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
        return
    console = Console()
    if report["conversations"]:
        console.print(_conversation_table(report))
    if _lost_line(report):
        console.print(f"[dim]{_lost_line(report)}[/dim]")
    if report.get("note"):
        console.print(f"[dim]{report['note']}[/dim]")
    if report["retrieval"]:
        console.print(_retrieval_table(report["retrieval"]))
        console.print(f"[dim]{report['retrieval_note']}[/dim]")


def _conversation_table(report: dict) -> Table:
    table = Table(title="Conversations replayed through the hook")
    for column in ("file", "mode", "added", "characters", "wait mean", "wait p95",
                   "added for nothing", "reminders found", "wrong items"):
        table.add_column(column, justify="left" if column in ("file", "mode") else "right")
    rows = list(report["conversations"])
    rows += [dict(r, file="total") for r in (report.get("total") or {}).values()]
    for r in rows:
        table.add_row(r["file"], r["mode"], str(r["added"]), f"{r['characters']:,}",
                      f"{r['wait_mean_s']:.3f} s", f"{r['wait_p95_s']:.3f} s",
                      f"{r['added_for_nothing']}/{r['expect_empty']}",
                      f"{r['reminders_found']}/{r['expect_some']}", str(r["wrong_items"]))
    return table


def _lost_line(report: dict) -> str:
    """Per file, where the reminders it missed were lost (from the hook's audit lines)."""
    parts = [f"{r['file']}: {_lost(r['lost'])}" for r in report["conversations"]
             if r.get("lost") and any(r["lost"].values())]
    return "where the missed reminders were lost: " + "; ".join(parts) if parts else ""


LOST_NAMES = {"not_searched": "not searched", "below_bar": "below the bar",
              "dropped": "dropped", "outranked": "outranked", "unknown": "no audit line"}


def _lost(counts: dict) -> str:
    """Where the missed reminders were lost, the stages that lost any."""
    return ", ".join(f"{LOST_NAMES.get(k, k)} {v}" for k, v in counts.items() if v) or "-"


def _retrieval_table(rows: list[dict]) -> Table:
    table = Table(title="Retrieval files (search + judging)")
    for column in ("file", "evidence found", "nothing kept", "passages", "characters",
                   "wait mean", "wait p95"):
        table.add_column(column, justify="left" if column == "file" else "right")
    for r in rows:
        table.add_row(r["file"],
                      f"{r['evidence_found']}/{r['answerable']} ({r['evidence_found_rate']:.2f})",
                      f"{r['nothing_kept']}/{r['unanswerable']} ({r['nothing_kept_rate']:.2f})",
                      str(r["passages"]), f"{r['characters']:,}",
                      f"{r['wait_mean_s']:.3f} s", f"{r['wait_p95_s']:.3f} s")
    return table
