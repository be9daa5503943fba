"""How the end-to-end tests run the real host CLIs offline: where the binaries are, and a
private HOME per run pointed at a fake model server on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NPM_BIN = REPO / ".cache" / "npm" / "node_modules" / ".bin"
# E2E_<NAME>_BIN overrides the pinned copy `make clis` installs (the MEMSIFT_ prefix is
# cleared from every test's environment, so these names avoid it).
BIN_ENV = {"claude": "E2E_CLAUDE_BIN", "codex": "E2E_CODEX_BIN", "node": "E2E_NODE_BIN",
           "skills": "E2E_SKILLS_BIN"}
FAKE_KEY = "sk-fake-e2e"


def find_cli(name: str) -> str | None:
    """The CLI binary, or None when neither the override nor the pinned copy exists."""
    override = os.environ.get(BIN_ENV[name])
    if override:
        return override if Path(override).exists() else shutil.which(override)
    pinned = NPM_BIN / name
    return str(pinned) if pinned.exists() else None


def _base_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "MEMSIFT_HOME", "MEMSIFT_PYTHON", "MEMSIFT_WARM",
            "MEMSIFT_WARM_IDLE_S")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["HOME"] = str(home)
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def claude_env(home: Path, base_url: str) -> dict[str, str]:
    """Claude Code with no network but the fake Messages server."""
    return _base_env(home) | {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        # without it: DNS look-ups and a GET /api/hello at start
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


CODEX_CONFIG = """\
check_for_update_on_startup = false
model = "gpt-fake"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_MODEL_KEY"

[analytics]
enabled = false  # else a 5 s wait at exit

[features]
plugins = {plugins}
"""


def codex_env(home: Path, base_url: str, *, plugins: bool = False) -> dict[str, str]:
    """Codex with no network but the fake Responses server; CODEX_HOME inside HOME."""
    env = _base_env(home)
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    config = CODEX_CONFIG.format(base_url=base_url, plugins=str(plugins).lower())
    (codex_home / "config.toml").write_text(config)
    return env | {"CODEX_HOME": str(codex_home), "FAKE_MODEL_KEY": FAKE_KEY}
