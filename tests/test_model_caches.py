"""The models' float32 caches made at set-up (`memsift warm prepare`): a hook process then
opens them instead of spending its budget making them, `memsift status` says whether they
are made, and an upgraded model file makes its cache again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakes.polling import PATIENT_BUDGET

from memsift.model import caches, cross, embed

REPO = Path(__file__).resolve().parents[1]


def memsift(*args: str, stdin: str | None = None, cwd: Path | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    # COLUMNS: the status view's lines unwrapped
    return subprocess.run([sys.executable, "-m", "memsift", *args], input=stdin, text=True,
                          capture_output=True, timeout=120, check=False, cwd=cwd,
                          env=dict(os.environ) | {"COLUMNS": "300"} | (env or {}))


def _stamps(cache_dir: Path) -> dict[str, tuple[int, int]]:
    """Every file of every cache: (inode, mtime) changes when it is written again."""
    return {str(p.relative_to(cache_dir)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(cache_dir.rglob("*")) if p.is_file()}


def test_warm_prepare_makes_each_cache_once(isolated_env):
    first = memsift("warm", "prepare")
    assert first.returncode == 0, first.stderr
    names = [name for name, _ in caches.models()]
    assert {"embedding model", "cross-encoder", "kind encoder"} <= set(names)
    lines = first.stdout.splitlines()
    assert len(lines) == len(names) and all("made in" in line for line in lines)
    assert caches.ready(isolated_env / "cache") == dict.fromkeys(names, True)
    again = memsift("warm", "prepare")
    assert again.stdout.count("already made") == len(names)


def test_the_loaders_open_what_prepare_made_without_writing(isolated_env):
    cache_dir = isolated_env / "cache"
    made = caches.prepare(cache_dir)
    assert all(m.built for m in made)
    before = _stamps(cache_dir)
    embed.load_model(embed.onnx_path(), cache_dir / embed.CACHE_NAME)
    for _, path in caches.models()[1:]:
        weights = cross.cached_weights(path, cross.cache_folder(path, cache_dir))
        assert not next(iter(v for v in weights.values() if v.ndim)).flags.owndata  # mapped
    assert _stamps(cache_dir) == before


def test_a_hook_after_prepare_answers_without_making_a_cache(isolated_env, tmp_path):
    assert memsift("warm", "prepare").returncode == 0
    before = _stamps(isolated_env / "cache")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    payload = json.dumps({"session_id": "s1", "cwd": str(project), "prompt_id": "p1",
                          "hook_event_name": "UserPromptSubmit",
                          "prompt": "which database did we pick for the refunds ledger?"})
    done = memsift("hook", "claude-code", "UserPromptSubmit", stdin=payload,
                   cwd=project, env=PATIENT_BUDGET)
    assert done.returncode == 0, done.stderr
    audit = [json.loads(line) for line in
             (isolated_env / "data" / "audit.jsonl").read_text().splitlines()]
    assert [s["name"] for s in audit[-1]["steps"]][:1] == ["kind"]  # the models were read
    assert _stamps(isolated_env / "cache") == before


def test_a_cache_from_other_bytes_is_not_ready_and_is_made_again(isolated_env):
    cache_dir = isolated_env / "cache"
    caches.prepare(cache_dir)
    meta_file = cross.cache_folder(cross.KIND_FILE, cache_dir) / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta.update(size=meta["size"] + 1, sha256="0" * 64)  # as after an upgrade of the file
    meta_file.write_text(json.dumps(meta))
    assert caches.ready(cache_dir)["kind encoder"] is False
    again = {m.name: m.built for m in caches.prepare(cache_dir)}
    assert again["kind encoder"] and not again["embedding model"] and not again["cross-encoder"]
    assert all(caches.ready(cache_dir).values())


def test_status_says_which_caches_are_missing_and_how_to_make_them(isolated_env):
    shown = memsift("status")
    assert "not cached yet" in shown.stdout and "memsift warm prepare" in shown.stdout
    assert json.loads(memsift("status", "--json").stdout)["models"]["embedding model"] is False
    memsift("warm", "prepare")
    assert "models: caches made" in memsift("status").stdout
