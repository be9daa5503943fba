"""Settings: defaults < config file (TOML) < MEMSIFT_* env vars < CLI flags.

Every setting has a dotted name ("llm.base_url"), a default whose type is the setting's type,
and an env var derived from the name (MEMSIFT_LLM_BASE_URL). Modules add their settings to
DEFAULTS here so `memsift status` can show everything in effect.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsift.paths import Paths, get_paths

DEFAULTS: dict[str, Any] = {
    # Decision model. Unset base_url means the offline local model.
    "llm.base_url": "",
    "llm.api_key": "",
    "llm.model": "",
    "llm.timeout_s": 1.5,  # one question; the whole prompt path has 2 s with an LLM
    # The decision model's backend: local | systemone | openai-decisions | chat. Empty: chat
    # when llm.base_url is set (the settings before backends had names), else local.
    "judge.backend": "",
    "judge.base_url": "",  # empty: the backend's own (TypeSafe, OpenAI)
    "judge.api_key": "",  # empty: TYPESAFE_API_KEY, OPENROUTER_API_KEY or OPENAI_API_KEY
    "judge.model": "",  # empty: the backend's pinned default
    "judge.timeout_s": 1.5,  # one request; the prompt path's steps cut it shorter
    "judge.threshold": -1.0,  # below 0: the backend's own threshold (memsift.judge.typed)
    "judge.price_per_mtok": -1.0,  # USD per million input tokens; below 0: the model's own
    # Long-term memory. Unset url means the embedded store in the data folder.
    "cognee.url": "",
    "cognee.api_key": "",
    "cognee.dataset": "",  # empty: one dataset per project, "memsift-<project>"
    "cognee.timeout_s": 3.0,  # hard client deadline for one recall on the prompt path
    # Budgets of the prompt path (seconds) and of what it adds (characters).
    "budget.prompt_s": 2.0,  # the host waits on us before the model sees the prompt
    "budget.search_s": 3.0,  # long-term search; never more than 12 s whatever is set
    "budget.chars": 1200,  # hard cap on the characters added to one prompt
    # Outages: a paused service is probed off the prompt path at most this often (seconds).
    "health.probe_every_s": 30.0,
    # The hook's own log level: debug, info, warning.
    "log.level": "info",
}

SECRET_KEYS = {"llm.api_key", "judge.api_key", "cognee.api_key"}

MAX_SEARCH_S = 12.0  # the long-term search never runs longer, whatever the config says

BACKENDS = ("local", "systemone", "openai-decisions", "chat")
DECISION_BACKENDS = ("systemone", "openai-decisions")  # the typed decision APIs


def judge_backend(settings) -> str:
    """The decision model's backend: judge.backend, else chat when llm.base_url is set (the
    [llm] settings keep meaning what they meant), else local. An unknown name is local."""
    chosen = str(settings["judge.backend"] or "").strip().lower()
    if not chosen:
        return "chat" if settings["llm.base_url"] else "local"
    return chosen if chosen in BACKENDS else "local"


def remote_judge(settings) -> bool:
    """Whether the decision model is outside the machine (its steps wait on the network)."""
    return judge_backend(settings) != "local"


class ConfigError(Exception):
    """The config file cannot be read; carries the file and line for the user."""

    def __init__(self, path: Path, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


def env_name(key: str) -> str:
    return "MEMSIFT_" + key.replace(".", "_").upper()


def _coerce(key: str, raw: Any) -> Any:
    default = DEFAULTS[key]
    if isinstance(default, bool):
        if isinstance(raw, str):
            return raw.strip().lower() in {"1", "true", "yes", "on"}
        return bool(raw)
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return type(default)(raw)
    return str(raw)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, key + "."))
        else:
            flat[key] = value
    return flat


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a TOML config file; raises ConfigError with the line on a syntax error."""
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise ConfigError(path, str(exc), line) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, str(exc)) from exc
    return _flatten(data)


@dataclass
class Settings:
    values: dict[str, Any]
    sources: dict[str, str]
    paths: Paths
    warnings: list[str] = field(default_factory=list)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def masked(self) -> dict[str, Any]:
        """Values for display, secrets masked."""
        out = {}
        for key, value in self.values.items():
            if key in SECRET_KEYS and value:
                value = str(value)[:3] + "…" + "*" * 4
            out[key] = value
        return out

    @property
    def search_budget_s(self) -> float:
        return min(float(self.values["budget.search_s"]), MAX_SEARCH_S)


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    strict: bool = True,
) -> Settings:
    """Merge the layers. strict=False (the hook) turns a bad config file into a warning."""
    environ = os.environ if environ is None else environ
    paths = get_paths()
    values = dict(DEFAULTS)
    sources = {key: "default" for key in DEFAULTS}
    warnings: list[str] = []
    config_path = Path(environ["MEMSIFT_CONFIG"]) if environ.get("MEMSIFT_CONFIG") else paths.config_file

    try:
        file_values = read_config_file(config_path)
    except ConfigError as exc:
        if strict:
            raise
        warnings.append(f"config ignored, using defaults: {exc}")
        file_values = {}
    layers = [
        (file_values, f"file {config_path}"),
        ({k: environ[env_name(k)] for k in DEFAULTS if env_name(k) in environ}, "env"),
        (dict(flags or {}), "flag"),
    ]
    for layer, source in layers:
        for key, raw in layer.items():
            if key not in DEFAULTS:
                warnings.append(f"unknown setting {key!r} ({source})")
                continue
            if raw is None:
                continue
            try:
                values[key] = _coerce(key, raw)
            except (TypeError, ValueError):
                message = f"bad value for {key!r} ({source}): {raw!r}"
                if strict and source != "env":
                    raise ConfigError(config_path, message) from None
                warnings.append(message)
                continue
            sources[key] = source
    backend = str(values["judge.backend"]).strip().lower()
    if backend and backend not in BACKENDS:
        warnings.append(f"unknown judge.backend {backend!r}: the local judge decides "
                        f"(one of {', '.join(BACKENDS)})")
    return Settings(values, sources, paths, warnings)
