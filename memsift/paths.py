"""Where memsift keeps things. MEMSIFT_HOME puts everything under one folder.

State files are 0600 in 0700 folders: notes and logs can hold project details.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

APP = "memsift"
PACKAGE_DATA = Path(__file__).resolve().parent / "data"  # files shipped inside the package


@dataclass(frozen=True)
class Paths:
    config_dir: Path
    data_dir: Path
    cache_dir: Path
    log_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def log_file(self) -> Path:
        return self.log_dir / "memsift.log"

    @property
    def audit_file(self) -> Path:
        return self.data_dir / "audit.jsonl"

    @property
    def projects_dir(self) -> Path:
        return self.data_dir / "projects"

    def project_dir(self, project_root: str | os.PathLike[str]) -> Path:
        return self.projects_dir / project_key(project_root)


def get_paths() -> Paths:
    home = os.environ.get("MEMSIFT_HOME")
    if home:
        root = Path(home).expanduser()
        return Paths(root / "config", root / "data", root / "cache", root / "logs")
    import platformdirs

    return Paths(
        Path(platformdirs.user_config_dir(APP)),
        Path(platformdirs.user_data_dir(APP)),
        Path(platformdirs.user_cache_dir(APP)),
        Path(platformdirs.user_log_dir(APP)),
    )


def ensure_dir(path: Path) -> Path:
    """Create a private folder (0700) and its parents."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def project_root(cwd: str | os.PathLike[str]) -> Path:
    """The git root of cwd, else cwd itself (no git process: walk up looking for .git)."""
    start = Path(cwd).expanduser().resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def project_key(root: str | os.PathLike[str]) -> str:
    """A readable, collision-free folder name for a project root."""
    resolved = str(Path(root).expanduser().resolve())
    name = Path(resolved).name or "root"
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[:40]
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:10]
    return f"{safe}-{digest}"


def git_root_via_git(cwd: str) -> Path | None:
    """Ask git itself (used by the CLI, never on the prompt path)."""
    try:
        out = subprocess.run(
            ["git", "-C", cwd, "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None
