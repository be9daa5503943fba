"""The `memsift` command line. Commands are thin: parse, call the library, print.

Each area keeps its commands in memsift/commands/<area>.py as a COMMANDS list.
"""

from __future__ import annotations

import importlib

import click

from memsift import DESCRIPTION, __version__

COMMAND_MODULES = ("setup", "judge", "memory", "bench", "notes", "redact", "cognee", "status",
                   "lifecycle")


class _Group(click.Group):
    """Every command reads the settings: a broken config file becomes one clear line (the
    file, the line, what is wrong) and exit 1, never a traceback."""

    def invoke(self, ctx: click.Context):
        from memsift.config import ConfigError

        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            raise click.ClickException(f"cannot read the config file: {exc}") from exc


@click.group(cls=_Group, help=DESCRIPTION)
@click.version_option(__version__, prog_name="memsift")
def cli() -> None:
    pass


@cli.command("hook")
@click.argument("host")
@click.argument("event")
def hook_command(host: str, event: str) -> None:
    """Run one hook event as a host would (reads the host's JSON on stdin)."""
    from memsift.hook import main

    raise SystemExit(main([host, event]))


for _name in COMMAND_MODULES:
    _module = importlib.import_module(f"memsift.commands.{_name}")
    for _command in _module.COMMANDS:
        cli.add_command(_command)
