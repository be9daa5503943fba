"""What `memsift status` and `memsift log` show: gathered as plain data (for `--json`), then
drawn with rich. Every piece of user text (paths, reasons, ids) goes through markup.escape.
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path
from typing import Any

from memsift import __version__
from memsift.audit import read_audit
from memsift.memory.notes import parse
from memsift.paths import project_key
from memsift.services.health import Health
from memsift.services.pause import LABELS, SERVICES

BOOTSTRAP_FILE = "bootstrap.json"  # written by the launcher when it prepares the environment
PROJECTS_SCAN_LIMIT = 200  # status lists projects, it does not walk a huge data folder
PROBLEM_ROWS = 10  # the most recent kinds of problem; the log file holds every line


# -- gathering ----------------------------------------------------------------------------

def collect(settings, decisions: int = 10) -> dict[str, Any]:
    """Everything `memsift status` shows, as JSON-ready data."""
    health = Health.for_settings(settings).snapshot()
    recent = read_audit(decisions)
    return {
        "version": __version__,
        "services": _services(settings, health["services"]),
        "outages": health["outages"],
        "config": {key: {"value": value, "source": settings.sources.get(key, "default")}
                   for key, value in sorted(settings.masked().items())},
        "config_warnings": list(settings.warnings),
        "paths": {"config": str(settings.paths.config_file),
                  "data": str(settings.paths.data_dir), "log": str(settings.paths.log_file)},
        "projects": projects(settings, read_audit(500)),
        "bootstrap": bootstrap_state(settings),
        "problems": problems(settings),
        "decisions": [summary(d) for d in recent],
        "judge_usage": judge_usage(settings),
        "warm": _warm(),
        "models": models_state(settings),
    }


def _warm() -> dict[str, Any]:
    from memsift import warm

    return warm.status()


def models_state(settings) -> dict[str, bool]:
    """Each offline model -> whether its float32 cache is made (memsift.model.caches)."""
    from memsift.model.caches import ready

    return ready(settings.paths.cache_dir)


def problems(settings) -> dict[str, Any]:
    """Hook errors and bad input (and every other warning) from the log's tail: how many,
    the last time, and why, per message."""
    from memsift.log import PROBLEMS_SCAN_BYTES, read_problems

    groups = read_problems(settings.paths.log_file)
    return {"count": sum(g["count"] for g in groups),
            "last": max((g["last"] for g in groups), default=""),
            "scanned_bytes": PROBLEMS_SCAN_BYTES, "by_message": groups[:PROBLEM_ROWS]}


def _services(settings, health: dict[str, Any]) -> dict[str, Any]:
    backends = {
        "longterm": f"cognee {settings['cognee.url']}" if settings["cognee.url"] else "embedded",
        "llm": f"openai-compatible {settings['llm.base_url']}" if settings["llm.base_url"]
        else "local",
        "decisions": _decision_backend(settings),
    }
    return {s: {"label": LABELS[s], "backend": backends[s], **health[s]} for s in SERVICES}


def _decision_backend(settings) -> str:
    """'systemone https://api.typesafe.ai (jev-1.13.0)', or why no remote judge is asked."""
    from memsift.config import DECISION_BACKENDS, judge_backend

    backend = judge_backend(settings)
    if backend not in DECISION_BACKENDS:
        return f"not used (judge: {backend})"
    if backend == "systemone":
        from memsift.judge import systemone as wire
    else:
        from memsift.judge import openai_decisions as wire  # type: ignore[no-redef]
    base = settings["judge.base_url"] or wire.DEFAULT_BASE_URL
    model = settings["judge.model"] or (wire.default_model(base) if backend == "systemone"
                                        else wire.DEFAULT_MODEL)
    return f"{backend} {base} ({model})"


USAGE_DAYS = 7  # days of remote-judge usage status shows; the file keeps a month


def judge_usage(settings) -> list[dict[str, Any]]:
    """The remote judge's requests, tokens and estimated cost per day and model, newest
    first."""
    from memsift.judge.usage import read_usage

    rows = []
    for day, models in sorted(read_usage(settings.paths.data_dir).items(), reverse=True):
        if not isinstance(models, dict):
            continue
        for model, entry in sorted(models.items()):
            if isinstance(entry, dict):
                rows.append({"day": day, "model": model, **entry})
    days = sorted({r["day"] for r in rows}, reverse=True)[:USAGE_DAYS]
    return [r for r in rows if r["day"] in days]


def projects(settings, decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each project folder in the data dir: its notes and long-term items, and its root
    when the audit log names it (the folder name is a digest of the root)."""
    roots = {project_key(d["project"]): d["project"] for d in decisions if d.get("project")}
    last = {d["project"]: d.get("time", "") for d in decisions if d.get("project")}
    folder = settings.paths.projects_dir
    try:
        entries = sorted(p for p in folder.iterdir() if p.is_dir())[:PROJECTS_SCAN_LIMIT]
    except OSError:
        return []
    out = []
    for entry in entries:
        root = roots.get(entry.name, "")
        out.append({"key": entry.name, "root": root, "notes": _count_notes(entry),
                    "longterm": _count_longterm(entry), "last_decision": last.get(root, "")})
    return out


def _count_notes(folder: Path) -> int | None:
    try:
        return len(parse((folder / "notes.md").read_text(encoding="utf-8")))
    except FileNotFoundError:
        return 0
    except (OSError, UnicodeDecodeError):
        return None  # unreadable: shown as "?"; `memsift notes` says more


def _count_longterm(folder: Path) -> int | None:
    """Items of the embedded store (one JSON line each), counted without loading vectors."""
    try:
        with open(folder / "longterm" / "passages.jsonl", "rb") as handle:
            return sum(1 for line in handle if line.strip())
    except FileNotFoundError:
        return 0
    except OSError:
        return None


def bootstrap_state(settings) -> dict[str, Any] | None:
    """What the launcher recorded when it prepared memsift's environment, if it did."""
    path = settings.paths.data_dir / BOOTSTRAP_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"error": f"unreadable {path.name}: {exc}"}
    return data if isinstance(data, dict) else {"value": data}


def summary(decision: dict[str, Any]) -> dict[str, Any]:
    """One audit line cut to what the status table shows."""
    added = decision.get("added") or []
    return {
        "time": decision.get("time", ""),
        "project": Path(str(decision.get("project", ""))).name,
        "kind": decision.get("kind", ""),
        "added": [f"{a.get('source', '')}:{a.get('id', '')}" for a in added],
        "chars": decision.get("chars", 0),
        "wait_ms": decision.get("wait_ms", 0.0),
        "errors": decision.get("errors") or [],
    }


# -- drawing ------------------------------------------------------------------------------

def render(data: dict[str, Any], console) -> None:
    """Draw the status view on a rich console."""
    from rich.markup import escape

    console.print(f"[bold]memsift {escape(data['version'])}[/bold]  "
                  f"data: {escape(_short_path(data['paths']['data']))}")
    console.print(_services_table(data["services"]))
    if "warm" in data:
        from memsift.commands.status import warm_line

        console.print(escape(warm_line(data["warm"])))
    if "models" in data:
        console.print(escape(models_line(data["models"])))
    if data["outages"]:
        console.print(_outages_table(data["outages"]))
    console.print(_config_table(data["config"]))
    for warning in data["config_warnings"]:
        console.print(f"[yellow]config: {escape(warning)}[/yellow]")
    console.print(_projects_table(data["projects"]))
    if data["bootstrap"] is not None:
        console.print(_bootstrap_table(data["bootstrap"]))
    if data["problems"]["count"]:
        console.print(_problems_table(data["problems"]))
    console.print(_decisions_table(data["decisions"]))
    if data.get("judge_usage"):
        console.print(_usage_table(data["judge_usage"]))


def models_line(models: dict[str, bool]) -> str:
    missing = [name for name, made in models.items() if not made]
    if not missing:
        return "models: caches made"
    return (f"models: not cached yet: {', '.join(missing)} (the next prompt makes the caches "
            "and may run out of time; `memsift warm prepare` makes them now)")


def _usage_table(rows: list[dict[str, Any]]):
    from rich.markup import escape

    table = _table("Remote decision model usage (UTC days; cost estimated from the model's "
                   "stated price)", "day", "backend model", "requests", "input tokens",
                   "est. cost")
    for row in rows:
        table.add_row(escape(str(row["day"])), escape(str(row["model"])),
                      str(row.get("requests", 0)), str(row.get("input_tokens", 0)),
                      f"${float(row.get('cost_usd', 0.0)):.4f}")
    return table


def _when(iso: str) -> str:
    """'2026-11-20T14:07:00+00:00' -> '2026-11-20 14:07:00' (UTC, as the files keep it)."""
    if not iso:
        return ""
    try:
        from memsift.clock import parse_time

        return parse_time(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


def _table(title: str, *columns: str):
    from rich.table import Table

    table = Table(title=title, title_justify="left", title_style="bold", expand=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _services_table(services: dict[str, Any]):
    from rich.markup import escape

    table = _table("Services (UTC)", "service", "backend", "state", "since", "why")
    for name, info in services.items():
        if info["state"] == "ok":
            state, since, why = "[green]ok[/green]", "", ""
        else:
            until = f" until {_when(info['until'])}" if info.get("until") else ""
            state = f"[red]paused[/red] ({escape(info['by'])}){escape(until)}"
            since, why = _when(info["since"]), f"{info['reason']}: {info.get('detail', '')}".rstrip(": ")
        table.add_row(escape(name), escape(info["backend"]), state, escape(since),
                      escape(why))
    return table


def _outages_table(outages: list[dict[str, Any]]):
    from rich.markup import escape

    table = _table("Outage history (UTC)", "service", "start", "end", "reason", "paused by",
                   "resumed by")
    for o in outages[-10:]:
        table.add_row(escape(str(o.get("service", ""))), _when(str(o.get("start", ""))),
                      _when(str(o.get("end", ""))),
                      *(escape(str(o.get(k, ""))) for k in ("reason", "paused_by", "resumed_by")))
    return table


def _config_table(config: dict[str, Any]):
    from rich.markup import escape

    table = _table("Configuration in effect", "setting", "value", "source")
    for key, entry in config.items():
        table.add_row(escape(key), escape(repr(entry["value"])), escape(entry["source"]))
    return table


def _projects_table(rows: list[dict[str, Any]]):
    from rich.markup import escape

    table = _table("Projects", "project", "notes", "long-term items", "last decision")
    for row in rows:
        name = _short_path(row["root"]) if row["root"] else row["key"]
        table.add_row(escape(name), _count(row["notes"]), _count(row["longterm"]),
                      _when(row["last_decision"]))
    if not rows:
        table.add_row("(none yet)", "", "", "")
    return table


PATH_CHARS = 48  # a project column that leaves the counts on one line in 100 columns


def _short_path(path: str) -> str:
    """The home folder as ~, and only the tail of a long path (its end names the project)."""
    home = str(Path.home())
    if home != "/" and (path == home or path.startswith(home + "/")):
        path = "~" + path[len(home):]
    return path if len(path) <= PATH_CHARS else "…" + path[-(PATH_CHARS - 1):]


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _bootstrap_table(state: dict[str, Any]):
    from rich.markup import escape

    table = _table("Bootstrap (the plugin's launcher)", "item", "value")
    for key, value in state.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        table.add_row(escape(str(key)), escape(shown))
    return table


def _problems_table(problems: dict[str, Any]):
    from rich.markup import escape

    table = _table(f"Problems in the log: {problems['count']}, the last at "
                   f"{_when(problems['last'])} (UTC)", "problem", "count", "last", "why")
    for row in problems["by_message"]:
        colour = "red" if row["level"] == "error" else "yellow"
        table.add_row(f"[{colour}]{escape(row['message'])}[/{colour}]", str(row["count"]),
                      _when(row["last"]), escape(_why(row["fields"])))
    return table


WHY_KEYS = ("error", "reason", "not_running", "path", "argv")  # the fields that say why


def _why(fields: dict[str, Any]) -> str:
    """The fields of a log line that say why, or all of them."""
    chosen = {k: fields[k] for k in WHY_KEYS if k in fields} or fields
    return "; ".join(f"{k}: {v}" for k, v in chosen.items())


def _decisions_table(rows: list[dict[str, Any]]):
    from rich.markup import escape

    table = _table("Last decisions (UTC)", "time", "project", "kind", "added", "chars",
                   "wait ms")
    for row in rows:
        added = escape(", ".join(row["added"]) or "nothing")
        if row["errors"]:
            added += f" [red]({escape('; '.join(row['errors']))})[/red]"
        table.add_row(_when(row["time"]), escape(row["project"]), escape(row["kind"]),
                      added, str(row["chars"]), f"{row['wait_ms']:.0f}")
    if not rows:
        table.add_row("(no decisions yet)", "", "", "", "", "")
    return table


def render_log(decisions: list[dict[str, Any]], console) -> None:
    """`memsift log`: each decision in full, steps and items included."""
    from rich.markup import escape

    for d in decisions:
        console.print(f"[bold]{escape(d.get('time', ''))}[/bold]  {escape(d.get('project', ''))}"
                      f"  session {escape(str(d.get('session', ''))[:12])}  "
                      f"{escape(d.get('host', ''))}")
        # Two short lines, not one: an 80-column terminal broke "wait 503 ms" in half.
        console.print(f"  wait {d.get('wait_ms', 0):.0f} ms, kind {escape(d.get('kind', ''))} "
                      f"(p={d.get('kind_p', 0):.2f}), search p={d.get('search_p', 0):.2f}")
        console.print(f"  prompt {d.get('prompt_chars', 0)} chars, added {d.get('chars', 0)} "
                      "chars")
        for step in d.get("steps") or []:
            console.print(f"    {escape(str(step.get('name')))}: {step.get('ms', 0):.1f} ms  "
                          f"{escape(str(step.get('result')))}")
        for item in d.get("added") or []:
            console.print(f"    + {escape(str(item.get('source')))}:{escape(str(item.get('id')))}"
                          f" score {item.get('score', 0):.2f} {escape(str(item.get('written')))}")
        judge = d.get("judge") or {}
        if judge:
            ids = ", ".join(str(i) for i in judge.get("request_ids") or [])
            console.print(f"    judge {escape(str(judge.get('backend')))} "
                          f"{escape(str(judge.get('model')))}: {judge.get('requests', 0)} "
                          f"requests, {judge.get('input_tokens', 0)} input tokens; "
                          f"request ids {escape(ids)}")
        for error in d.get("errors") or []:
            console.print(f"    [red]! {escape(str(error))}[/red]")
    if not decisions:
        console.print("no decisions yet")
