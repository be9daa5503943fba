"""Commands: status, log, pause, resume."""

from __future__ import annotations

import json
import re

import click

from memsift.services.pause import LABELS, SERVICES

_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'90s', '15m', '1h', '1h30m', '2d' -> seconds."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION_RE.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise click.BadParameter(f"{text!r} is not a duration like 90s, 15m, 1h or 1h30m")
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def _console():
    from rich.console import Console

    return Console()


def _settings():
    from memsift.config import load_settings

    return load_settings()


@click.command("status")
@click.option("-n", "decisions", default=10, show_default=True,
              help="How many recent decisions to show.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def status(decisions: int, as_json: bool) -> None:
    """Services and their health, pauses and outages, the configuration in effect, notes and
    long-term items per project, and the last decisions."""
    from memsift.commands.status_view import collect, render

    data = collect(_settings(), decisions=decisions)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=1, default=str))
        return
    render(data, _console())


@click.command("log")
@click.option("-n", "count", default=20, show_default=True, help="How many decisions.")
@click.option("--project", type=click.Path(file_okay=False),
              help="Only this project (its folder; the git root is found from it).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines for scripts.")
def log_command(count: int, project: str | None, as_json: bool) -> None:
    """The last decisions in full: steps and their times, items added, errors."""
    from memsift.audit import read_audit
    from memsift.commands.status_view import render_log
    from memsift.paths import project_root

    _settings()  # a broken config is reported here, like every command
    root = str(project_root(project)) if project else None
    decisions = read_audit(count, project=root)
    if as_json:
        for decision in decisions:
            click.echo(json.dumps(decision, ensure_ascii=False))
        return
    render_log(decisions, _console())


def _services(service: str | None) -> list[str]:
    return [service] if service else list(SERVICES)


@click.command("pause")
@click.argument("service", required=False, type=click.Choice(SERVICES))
@click.option("--for", "duration", help="Resume by itself after this long (90s, 15m, 1h).")
def pause(service: str | None, duration: str | None) -> None:
    """Pause SERVICE (longterm, llm or decisions; all when omitted): prompts go on without it
    until `memsift resume` or the --for time is up."""
    from memsift.services.health import Health

    for_s = parse_duration(duration) if duration else None
    health = Health.for_settings(_settings())
    for name in _services(service):
        paused = health.pause(name, for_s=for_s)
        until = f" until {paused.until}" if paused.until else " until `memsift resume`"
        click.echo(f"{LABELS[name]} paused{until}")


@click.command("resume")
@click.argument("service", required=False, type=click.Choice(SERVICES))
def resume(service: str | None) -> None:
    """Resume SERVICE (all when omitted), whether the user or an outage paused it."""
    from memsift.services.health import Health

    health = Health.for_settings(_settings())
    for name in _services(service):
        was = health.resume(name, by="user")
        click.echo(f"{LABELS[name]} {'resumed' if was else 'was not paused'}")


@click.group("warm")
def warm_group() -> None:
    """The warm prompt server: one process that keeps the prompt path loaded (MEMSIFT_WARM=0
    turns it off)."""


@warm_group.command("status")
def warm_status() -> None:
    """Whether this environment's warm server runs, and how many prompts it answered."""
    from memsift import warm

    click.echo(warm_line(warm.status()))


@warm_group.command("stop")
def warm_stop() -> None:
    """Stop this environment's warm server; the next prompt starts a new one."""
    from memsift import warm

    click.echo("warm server stopped" if warm.stop() else "no warm server was running")


@warm_group.command("prepare")
def warm_prepare() -> None:
    """Make the offline models' float32 caches now, as set-up does, so that the first prompt
    opens them instead of spending about a second making them."""
    from memsift.model.caches import CachesError, prepare
    from memsift.paths import get_paths

    try:
        done = prepare(get_paths().cache_dir)
    except CachesError as exc:
        raise click.ClickException(f"the models' caches could not be made: {exc}") from exc
    for model in done:
        state = f"made in {model.seconds:.2f} s" if model.built else "already made"
        click.echo(f"{model.name}: {state} ({model.cache})")


def warm_line(state: dict) -> str:
    if not state.get("enabled"):
        return "warm server: off (MEMSIFT_WARM=0, or no private socket folder here)"
    if not state.get("running"):
        return "warm server: not running (the next prompt starts it)"
    return (f"warm server: running, pid {state['pid']}, {state['answered']} prompts answered, "
            f"exits after {state['idle_s'] / 60:.0f} idle minutes")


COMMANDS = [status, log_command, pause, resume, warm_group]
