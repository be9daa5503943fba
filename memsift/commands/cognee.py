"""Commands: `memsift sync` and `memsift cognee install|start|stop|status`."""

from __future__ import annotations

import click


def _settings():
    from memsift.config import load_settings

    return load_settings()


def _project(project: str | None):
    import os

    from memsift.paths import git_root_via_git, project_root

    cwd = project or os.getcwd()
    return git_root_via_git(cwd) or project_root(cwd)


@click.command("sync")
@click.option("--project", type=click.Path(file_okay=False), default=None,
              help="The project whose notes to send (default: the current one).")
def sync(project: str | None) -> None:
    """Send the project's notes to its Cognee dataset: new and edited notes are added, the
    old versions of edited and removed notes forgotten, and cognify started in the background.
    What cannot be sent stays queued for the next sync."""
    from rich.progress import Progress

    from memsift.longterm.sync import sync_project

    settings = _settings()
    if not settings["cognee.url"]:
        raise click.ClickException("no Cognee server configured: set cognee.url, or run "
                                   "`memsift cognee start`")
    root = _project(project)
    with Progress(transient=True) as bar:
        task = bar.add_task("uploading notes", total=None)
        report = sync_project(root, settings,
                              progress=lambda done, total: bar.update(task, completed=done,
                                                                      total=total))
    if not report.ok:
        raise click.ClickException(f"sync failed, {report.pending} change(s) stay queued: "
                                   f"{report.error}")
    click.echo(f"added {report.added}, forgotten {report.forgotten}"
               + (", cognify started" if report.cognify_started else ", nothing to send"))


@click.group("cognee")
def cognee() -> None:
    """Run a local Cognee server as the long-term memory."""


@cognee.command("install")
def install() -> None:
    """Install Cognee into its own venv in memsift's cache folder (about 1.6 GB)."""
    from memsift.services.cognee_server import default_venv, install_venv

    venv = default_venv(_settings())
    click.echo(f"installing Cognee into {venv} ...")
    install_venv(venv)
    click.echo("done; `memsift cognee start` runs it")


@cognee.command("start")
@click.option("--port", type=int, default=None, help="Loopback port (default 8737).")
def start(port: int | None) -> None:
    """Start a local Cognee server on 127.0.0.1 with memsift's model server beside it, and
    store its URL and a new API key in memsift's config file."""
    from memsift.services.cognee_local import DEFAULT_PORT, start_local
    from memsift.services.cognee_server import CogneeServerError

    try:
        state = start_local(_settings(), port or DEFAULT_PORT)
    except CogneeServerError as exc:
        raise click.ClickException(str(exc)) from exc
    mode = "offline (no language model: chunks only)" if state.get("offline") else "with LLM"
    click.echo(f"Cognee running at {state['url']}, {mode}")


@cognee.command("stop")
def stop() -> None:
    """Stop the local Cognee server and the model server."""
    from memsift.services.cognee_local import stop_local

    click.echo("stopped" if stop_local(_settings()) else "not running")


@cognee.command("status")
def status() -> None:
    """Say which Cognee server is configured and whether it answers."""
    from memsift.services.cognee_local import local_status

    info = local_status(_settings())
    if not info["url"]:
        click.echo("no Cognee server configured: the embedded store is in use")
        return
    click.echo(f"url: {info['url']}")
    click.echo(f"healthy: {'yes' if info['healthy'] else 'no'}")
    click.echo(f"api key: {'set' if info['api_key'] else 'missing'}")
    if info["local"]:
        click.echo(f"local server: {'running' if info['running'] else 'not running'}"
                   + (", offline" if info["offline"] else ""))
    if not info["healthy"]:
        raise SystemExit(1)


COMMANDS = [sync, cognee]
