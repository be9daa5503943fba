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


def run_demo(home: Path | None = None, as_json: bool = False) -> list[dict]:
    """Replay the sample session; prints the table (or JSON) and returns its rows."""
    sample = load_sample()
    if home is not None:
        return _replay(sample, Path(home), as_json)
    with tempfile.TemporaryDirectory(prefix="memsift-demo-") as tmp:
        return _replay(sample, Path(tmp), as_json)


def _replay(sample: dict, home: Path, as_json: bool = False) -> list[dict]:
    from rich.console import Console
    from rich.status import Status

    from memsift.bench.replay import Transcript, memsift_home, prepare, run_hook, stop_warm

    console = Console(stderr=as_json)  # with --json, stdout holds the JSON alone
    rows = []
    with memsift_home(home / "home"), Status("importing the sample project...",
                                             console=console) as status:
        home.mkdir(parents=True, exist_ok=True)
        _, project = prepare(sample, _fresh(home), "embedded")
        env = dict(os.environ)
        transcript = Transcript(home / "transcript.jsonl", project)
        try:
            for index, turn in enumerate(sample["turns"], start=1):
                status.update(f"message {index} of {len(sample['turns'])}...")
                transcript.user(turn["user"])
                added, wait = run_hook(turn["user"], transcript, index, env)
                transcript.assistant(turn.get("assistant", ""))
                rows.append(_row(turn["user"], added, wait, turn.get("expect", [])))
        finally:
            stop_warm(env)
    if as_json:
        print(json.dumps({"rows": rows, "summary": summary(rows)}, indent=1))
    else:
        console.print(_table(rows))
        console.print(f"[dim]{_summary(rows)}[/dim]")
    return rows


def _fresh(home: Path) -> Path:
    """A work folder for the sample project that does not exist yet (prepare creates it)."""
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=home))
    return folder


def _row(message: str, added: str, wait: float, expect: list[str]) -> dict:
    """One message: what it should get (the sample's labels), what it got, and the verdict:
    "answered", "missed" (an answer was there, nothing of it added), "wrong" (something else
    added), "silent" (nothing needed, nothing added) or "for nothing"."""
    from memsift.audit import read_audit

    last = read_audit(1)
    decision = last[0] if last else {}
    items = decision.get("added", [])
    got = {i["id"] for i in items}
    if expect:
        verdict = "answered" if got & set(expect) else ("wrong" if got else "missed")
    else:
        verdict = "for nothing" if got else "silent"
    return {"message": message, "kind": decision.get("kind", "?"), "expect": list(expect),
            "items": items, "added": added, "chars": len(added), "wait_s": wait,
            "verdict": verdict, "why": why_missed(decision, expect, got)}


def why_missed(decision: dict, expect: list[str], got: set[str]) -> list[str]:
    """Where each expected item that was not added was lost (memsift.audit.where_lost)."""
    from memsift.audit import where_lost

    return [f"{item}: {why}" for item, _, why in where_lost(decision, expect, got)]


def _table(rows: list[dict]):
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="memsift demo: a sample session, one hook process per message",
                  show_lines=True)
    table.add_column("message", overflow="fold", max_width=40)
    table.add_column("kind")
    table.add_column("should get")
    table.add_column("added to the prompt", overflow="fold")
    table.add_column("verdict")
    table.add_column("wait", justify="right")
    colours = {"answered": "green", "silent": "green", "missed": "yellow", "wrong": "red",
               "for nothing": "red"}
    for row in rows:
        should = ", ".join(row["expect"]) or "[dim]nothing[/dim]"
        verdict = f"[{colours[row['verdict']]}]{row['verdict']}[/]"
        table.add_row(escape(_short(row["message"])), row["kind"], should, _added(row),
                      verdict, f"{row['wait_s']:.2f} s")
    return table


def _added(row: dict) -> str:
    from rich.markup import escape

    why = "".join(f"\n[yellow]{escape(w)}[/yellow]" for w in row.get("why", []))
    if not row["items"]:
        return "[dim]nothing[/dim]" + why
    lines = [f"{i['source']} {escape(i['id'])} (score {i['score']:.2f})" for i in row["items"]]
    return "\n".join(lines) + f"\n[dim]{row['chars']} characters[/dim]" + why


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def summary(rows: list[dict]) -> dict:
    waits = [r["wait_s"] for r in rows]
    verdicts = [r["verdict"] for r in rows]
    return {"messages": len(rows), "answerable": sum(1 for r in rows if r["expect"]),
            "answered": verdicts.count("answered"), "missed": verdicts.count("missed"),
            "wrong": verdicts.count("wrong"), "for_nothing": verdicts.count("for nothing"),
            "silent": verdicts.count("silent"), "chars": sum(r["chars"] for r in rows),
            "wait_mean_s": round(sum(waits) / len(waits), 3) if waits else 0.0}


def _summary(rows: list[dict]) -> str:
    s = summary(rows)
    return (f"{s['answered']} of {s['answerable']} answerable messages got their answer "
            f"({s['missed']} missed, {s['wrong']} wrong); {s['for_nothing']} of "
            f"{s['messages'] - s['answerable']} others got something; {s['chars']} characters "
            f"in all; mean wait {s['wait_mean_s']:.2f} s per message, process start included.")
