"""`memsift demo`: a sample project (memsift/sample, shipped in the package) and a short session
replayed through the real hook, one fresh process per message, as Claude Code would run it.

It runs in a temporary MEMSIFT_HOME unless told otherwise, so it never touches the user's own
memory.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

# Package data, so the demo runs from a wheel (pip, pipx) as well as from a clone.
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample"
SHOWN_CHARS = 90  # of a message or an added item: enough to recognise it in the table


class DemoError(Exception):
    pass


def load_sample(folder: Path = SAMPLE_DIR) -> dict:
    """The sample as a benchmark-shaped dict: notes, memory, turns."""
    from memsift.memory.notes import parse

    try:
        notes = parse((folder / "notes.md").read_text(encoding="utf-8"))
        memory = [json.loads(line) for line in
                  (folder / "memory.jsonl").read_text(encoding="utf-8").splitlines() if line]
        session = json.loads((folder / "session.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DemoError(f"the sample project is missing or damaged in {folder}: {exc}") from exc
    return {"notes": [{"id": n.id, "text": n.text, "written": n.written} for n in notes],
            "memory": memory, "turns": session["turns"], "name": session.get("name", "sample")}


def run_demo(home: Path | None = None) -> list[dict]:
    """Replay the sample session; prints the table and returns its rows."""
    sample = load_sample()
    if home is not None:
        return _replay(sample, Path(home))
    with tempfile.TemporaryDirectory(prefix="memsift-demo-") as tmp:
        return _replay(sample, Path(tmp))


def _replay(sample: dict, home: Path) -> list[dict]:
    from rich.console import Console
    from rich.status import Status

    from memsift.bench.replay import Transcript, memsift_home, prepare, run_hook

    console = Console()
    rows = []
    with memsift_home(home / "home"), Status("importing the sample project...",
                                             console=console) as status:
        home.mkdir(parents=True, exist_ok=True)
        _, project = prepare(sample, _fresh(home), "embedded")
        env = dict(os.environ)
        transcript = Transcript(home / "transcript.jsonl", project)
        for index, turn in enumerate(sample["turns"], start=1):
            status.update(f"message {index} of {len(sample['turns'])}...")
            transcript.user(turn["user"])
            added, wait = run_hook(turn["user"], transcript, index, env)
            transcript.assistant(turn.get("assistant", ""))
            rows.append(_row(turn["user"], added, wait))
    console.print(_table(rows))
    console.print(f"[dim]{_summary(rows)}[/dim]")
    return rows


def _fresh(home: Path) -> Path:
    """A work folder for the sample project that does not exist yet (prepare creates it)."""
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=home))
    return folder


def _row(message: str, added: str, wait: float) -> dict:
    from memsift.audit import read_audit

    last = read_audit(1)
    decision = last[0] if last else {}
    return {"message": message, "kind": decision.get("kind", "?"),
            "items": decision.get("added", []), "added": added, "chars": len(added),
            "wait_s": wait}


def _table(rows: list[dict]):
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="memsift demo: a sample session, one hook process per message",
                  show_lines=True)
    table.add_column("message", overflow="fold", max_width=40)
    table.add_column("kind")
    table.add_column("added to the prompt", overflow="fold")
    table.add_column("wait", justify="right")
    for row in rows:
        table.add_row(escape(_short(row["message"])), row["kind"], _added(row),
                      f"{row['wait_s']:.2f} s")
    return table


def _added(row: dict) -> str:
    from rich.markup import escape

    if not row["items"]:
        return "[dim]nothing[/dim]"
    lines = [f"{i['source']} {escape(i['id'])} (score {i['score']:.2f})" for i in row["items"]]
    return "\n".join(lines) + f"\n[dim]{row['chars']} characters[/dim]"


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _summary(rows: list[dict]) -> str:
    added = sum(1 for r in rows if r["items"])
    waits = [r["wait_s"] for r in rows]
    mean = sum(waits) / len(waits) if waits else 0.0
    return (f"{added} of {len(rows)} messages got memory, {sum(r['chars'] for r in rows)} "
            f"characters in all; mean wait {mean:.2f} s per message, process start included.")
