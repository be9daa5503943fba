"""Commands: install and uninstall memsift's hooks in a host's own config."""

from __future__ import annotations

from pathlib import Path

import click

from memsift.hosts.install import HOSTS, InstallError, apply, codex_project_trusted, plan

_host = click.argument("host", type=click.Choice(HOSTS))
_project = click.option(
    "--project", type=click.Path(file_okay=False, path_type=Path),
    help="Install into this project's config instead of the user's.")
_dry_run = click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing.")


def _run(host: str, project: Path | None, dry_run: bool, **kwargs) -> None:
    try:
        changes = plan(host, project=project, **kwargs)
    except InstallError as exc:
        raise click.ClickException(str(exc)) from exc
    changed = [c for c in changes if c.changed]
    if not changed:
        click.echo(f"{host}: already up to date, nothing to change.")
        return
    if dry_run:
        for change in changed:
            click.echo(change.diff())
        return
    for path in apply(changed):
        click.echo(f"updated {path}")


@click.command("install")
@_host
@_project
@click.option("--python", "python", type=click.Path(dir_okay=False),
              help="The interpreter the hooks run (default: this one).")
@_dry_run
def install_command(host: str, project: Path | None, python: str | None, dry_run: bool) -> None:
    """Add memsift's hooks to HOST (claude-code or codex) without a plugin marketplace.

    Claude Code: hooks in ~/.claude/settings.json (or PROJECT/.claude/settings.json).
    Codex: hooks in $CODEX_HOME/hooks.json (or PROJECT/.codex/hooks.json) and their trust
    entries in $CODEX_HOME/config.toml, without which Codex skips them. Other settings are
    kept; running it again changes nothing.
    """
    if python:
        python = str(Path(python).absolute())
    _run(host, project, dry_run, python=python)
    if not dry_run:
        _prepare_models()
    if host == "codex" and project and not codex_project_trusted(project):
        click.echo(f"note: Codex runs {project}/.codex/hooks.json only in a trusted project; "
                   "trust it when Codex asks, or add to your Codex config.toml:\n"
                   f'  [projects."{project.resolve()}"]\n  trust_level = "trusted"')


def _prepare_models() -> None:
    """The models' caches, so the first prompt does not spend its budget making them
    (memsift.model.caches). A failure leaves the hooks installed: the prompt makes them."""
    from memsift.model.caches import CachesError, prepare
    from memsift.paths import get_paths

    try:
        done = prepare(get_paths().cache_dir)
    except CachesError as exc:
        click.echo(f"note: the models' caches could not be made ({exc}); the first prompt "
                   "makes them", err=True)
        return
    made = [m for m in done if m.built]
    if made:
        seconds = sum(m.seconds for m in made)
        click.echo(f"made the models' caches in {seconds:.1f} s: "
                   f"{', '.join(m.name for m in made)}")


@click.command("uninstall")
@_host
@_project
@_dry_run
def uninstall_command(host: str, project: Path | None, dry_run: bool) -> None:
    """Remove memsift's hooks (and, for Codex, their trust entries) from HOST's config."""
    _run(host, project, dry_run, remove=True)


COMMANDS = [install_command, uninstall_command]
