"""Commands: redact."""

from __future__ import annotations

import sys

import click


@click.command("redact")
@click.option("--findings", is_flag=True, help="Also list what was replaced (on stderr).")
def redact_command(findings: bool) -> None:
    """Read text on stdin and print it as memsift would send or write it: every secret
    replaced with a typed placeholder such as [REDACTED:aws_access_key]."""
    from memsift.redact import redact

    text, found = redact(sys.stdin.read())
    click.echo(text, nl=False)
    if findings:
        for finding in found:
            click.echo(f"{finding.kind} at {finding.start}-{finding.end}", err=True)


COMMANDS = [redact_command]
