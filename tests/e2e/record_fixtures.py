"""Record real hook payloads and transcripts from the real CLIs into tests/fixtures/hosts/.

Runs each host against the fake model servers with a hook that saves its stdin, over a
two-prompt session with one tool call and one hook that adds context, so the fixtures hold
every kind of line the adapters must keep or skip. Re-run after a host upgrade:

    python tests/e2e/record_fixtures.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from fakes.anthropic_server import FakeAnthropicServer
from fakes.responses_server import FakeResponsesServer

from e2e.hostenv import claude_env, codex_env, find_cli

OUT = TESTS / "fixtures" / "hosts"
EVENTS = ("UserPromptSubmit", "Stop", "SessionEnd")
PROMPTS = ("Which port does the staging database use?", "And the production one?")
ADDED = "Recorded note: the staging database settings live in ops/staging.env."

DUMP_HOOK = """#!/bin/sh
# Save the hook's stdin; on UserPromptSubmit also add context, as memsift would.
cat > "$DUMP_DIR/$1-$(date +%s%N).json"
if [ "$1" = UserPromptSubmit ]; then
  printf '%s' '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"ADDED"}}'
fi
"""


def _hooks_config(dump: Path) -> dict:
    return {"hooks": {
        event: [{"hooks": [{"type": "command", "command": f"{dump} {event}", "timeout": 10}]}]
        for event in EVENTS
    }}


def _save(host: str, dumps: Path, transcript: Path) -> None:
    target = OUT / host
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    counts: dict[str, int] = {}
    for path in sorted(dumps.iterdir()):
        event = path.name.split("-")[0]
        counts[event] = counts.get(event, 0) + 1
        payload = json.loads(path.read_text())
        (target / f"{event}-{counts[event]}.json").write_text(json.dumps(payload, indent=1))
    shutil.copy(transcript, target / "transcript.jsonl")
    print(f"{host}: {sorted(p.name for p in target.iterdir())}")


def _setup(tmp: Path) -> tuple[Path, Path, Path]:
    dumps, proj = tmp / "dumps", tmp / "proj"
    dumps.mkdir()
    proj.mkdir()
    dump = tmp / "dump.sh"
    dump.write_text(DUMP_HOOK.replace("ADDED", ADDED))
    dump.chmod(0o755)
    return dumps, proj, dump


def record_claude(tmp: Path) -> None:
    dumps, proj, dump = _setup(tmp)
    settings = tmp / "settings.json"
    settings.write_text(json.dumps(_hooks_config(dump)))
    tool = {"name": "Bash", "input": {"command": "echo 5433", "description": "Print the port"}}
    replies = [tool, "The staging database listens on port 5433.", "Production uses 5432."]
    with FakeAnthropicServer(replies) as server:
        env = claude_env(tmp / "home", server.url) | {"DUMP_DIR": str(dumps)}
        base = [find_cli("claude"), "--output-format", "json", "--settings", str(settings),
                "--allowedTools", "Bash"]
        first = subprocess.run([*base, "-p", PROMPTS[0]], cwd=proj, env=env,
                               capture_output=True, text=True, timeout=120, check=True)
        session = json.loads(first.stdout)["session_id"]
        subprocess.run([*base, "-r", session, "-p", PROMPTS[1]], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=120, check=True)
    transcript = next((tmp / "home" / ".claude" / "projects").rglob(f"{session}.jsonl"))
    _save("claude-code", dumps, transcript)


def record_codex(tmp: Path) -> None:
    dumps, proj, dump = _setup(tmp)
    tool = {"name": "exec_command", "arguments": {"cmd": "echo 5433"}}
    replies = [tool, "The staging database listens on port 5433.", "Production uses 5432."]
    with FakeResponsesServer(replies) as server:
        env = codex_env(tmp / "home", server.url) | {"DUMP_DIR": str(dumps)}
        codex_home = Path(env["CODEX_HOME"])
        (codex_home / "hooks.json").write_text(json.dumps(_hooks_config(dump)))
        base = [find_cli("codex"), "exec", "--skip-git-repo-check",
                "--dangerously-bypass-hook-trust"]
        subprocess.run([*base, PROMPTS[0]], cwd=proj, env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120, check=True)
        transcript = next((codex_home / "sessions").rglob("rollout-*.jsonl"))
        session = json.loads(transcript.read_text().splitlines()[0])["payload"]["id"]
        subprocess.run([find_cli("codex"), "exec", "--skip-git-repo-check",
                        "--dangerously-bypass-hook-trust", "resume", session, PROMPTS[1]],
                       cwd=proj, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120, check=True)
    _save("codex", dumps, transcript)


def main() -> None:
    for record in (record_claude, record_codex):
        with tempfile.TemporaryDirectory(prefix="memsift-rec-") as tmp:
            record(Path(tmp))


if __name__ == "__main__":
    main()
