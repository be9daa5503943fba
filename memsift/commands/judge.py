"""`memsift judge`: ask the decision model about one message, to debug and to document it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

DEFAULT_THRESHOLD = 0.5  # for a backend that does not say its own
ITEM_SHOWN_CHARS = 70  # an item is a passage; its start is enough to tell which one


@click.command("judge")
@click.argument("message")
@click.option("--item", "items", multiple=True, metavar="TEXT",
              help="A passage to score against MESSAGE (repeat for several).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def judge(message: str, items: tuple[str, ...], as_json: bool) -> None:
    """Print the probability of each kind of MESSAGE and, for each --item, the probability
    that it answers MESSAGE. Uses the configured backend (judge.backend: local, systemone,
    openai-decisions, or chat with llm.base_url)."""
    report = _ask(message, items)
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print_tables(report)


def _ask(message: str, items: Sequence[str]) -> dict[str, Any]:
    from memsift.config import ConfigError, load_settings
    from memsift.judge import JudgeError, get_judge

    try:
        model = get_judge(load_settings())
    except (ConfigError, JudgeError) as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        kinds = model.kind(message)
        scores = model.score(message, list(items)) if items else []
    except JudgeError as exc:
        reason = getattr(exc, "reason", "error")
        raise click.ClickException(f"the decision model did not answer ({reason}): {exc}") from exc
    finally:
        getattr(model, "close", lambda: None)()
    return _report(model, kinds, items, scores)


def _report(model: Any, kinds: dict[str, float], items: Sequence[str],
            scores: Sequence[float]) -> dict[str, Any]:
    from memsift.judge.base import needs_search

    threshold = _threshold(model)
    search = needs_search(kinds)
    return {
        "backend": getattr(model, "name", type(model).__name__),
        "kinds": dict(sorted(kinds.items(), key=lambda kv: kv[1], reverse=True)),
        "search": search,
        "no_search": 1.0 - search,
        "threshold": threshold,
        "items": [{"text": text, "score": score, "passes": score >= threshold}
                  for text, score in zip(items, scores)],
    }


def _threshold(model: Any) -> float:
    """The backend's own cut, stated as a value or a method; 0.5 when it states none."""
    stated = getattr(model, "threshold", DEFAULT_THRESHOLD)
    return float(stated() if callable(stated) else stated)


def _print_tables(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from memsift.judge.base import SEARCH_KINDS

    console = Console()
    kinds = Table(title=f"kind of message ({escape(report['backend'])} backend)")
    kinds.add_column("kind")
    kinds.add_column("probability", justify="right")
    kinds.add_column("memory")
    for kind, p in report["kinds"].items():
        kinds.add_row(kind, f"{p:.3f}", "search" if kind in SEARCH_KINDS else "")
    console.print(kinds)
    console.print(f"search {report['search']:.3f}   no search {report['no_search']:.3f}")
    if report["items"]:
        console.print(_items_table(report, escape))


def _items_table(report: dict[str, Any], escape: Any) -> Any:
    from rich.table import Table

    table = Table(title=f"items (threshold {report['threshold']:.2f})")
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("passes")
    table.add_column("item")
    for n, item in enumerate(report["items"], 1):
        text = item["text"]
        shown = text if len(text) <= ITEM_SHOWN_CHARS else text[: ITEM_SHOWN_CHARS - 1] + "…"
        table.add_row(str(n), f"{item['score']:.3f}", "yes" if item["passes"] else "no",
                      escape(shown))
    return table


COMMANDS = [judge]
