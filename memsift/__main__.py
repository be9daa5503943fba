"""Console entry point.

`memsift hook ...` is on every prompt's path, so it skips click and rich entirely and goes
straight to the lean hook runner; everything else goes through the click CLI.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        from memsift.hook import main as hook_main

        raise SystemExit(hook_main(args[1:]))
    from memsift.cli import cli

    cli.main(args=args, prog_name="memsift")


if __name__ == "__main__":
    main()
