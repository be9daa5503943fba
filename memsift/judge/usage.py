"""What the remote decision model costs: requests and tokens per day and model, and the
estimated cost at the model's stated price, in `judge_usage.json` in the data folder.

Written once per prompt that asked a remote judge (and once per session-end pass), under a
lock, atomically; read by `memsift status`. Nothing is sent anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memsift.clock import now
from memsift.fsutil import atomic_write, file_lock

USAGE_FILE = "judge_usage.json"
KEEP_DAYS = 31  # a month of days: enough to see a bill coming, small enough to rewrite


def _path(data_dir: Path) -> Path:
    return data_dir / USAGE_FILE


def read_usage(data_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{day: {"backend model": {requests, input_tokens, output_tokens, cost_usd}}}; a
    missing or corrupt file is no usage."""
    try:
        data = json.loads(_path(data_dir).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(data_dir: Path, judge: Any, requests: int, input_tokens: int,
           output_tokens: int) -> None:
    """Add one prompt's (or one pass's) requests to today's line for the judge's model."""
    key = f"{judge.name} {judge.model}"
    price = float(getattr(judge, "price_per_mtok", 0.0))
    day = now().date().isoformat()
    with file_lock(data_dir / (USAGE_FILE + ".lock")):
        usage = read_usage(data_dir)
        entry = usage.setdefault(day, {}).setdefault(
            key, {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
        entry["requests"] += requests
        entry["input_tokens"] += input_tokens
        entry["output_tokens"] += output_tokens
        # billed on input tokens alone: both APIs' output tokens are free or negligible
        entry["cost_usd"] = round(entry["input_tokens"] * price / 1e6, 9)
        entry["price_per_mtok"] = price
        for old in sorted(usage)[:-KEEP_DAYS]:
            del usage[old]
        atomic_write(_path(data_dir), json.dumps(usage, indent=1, sort_keys=True))
