"""What a project's Cognee dataset is, shared by the client (cognee.py) and the sync (sync.py):
its name, how Cognee names an item, where the sync state and queue live, the vector caches'
names. Here so that neither of the two imports the other."""

from __future__ import annotations

import hashlib
from pathlib import Path

ADD_BATCH = 20  # notes per upload: a large first sync shows progress and no request is huge
VECTOR_CACHE_NAME = "cognee-vectors"  # the synced notes' vectors, beside the sync state
IMPORT_VECTOR_CACHE_NAME = "cognee-import-vectors"  # an imported memory's (bench, tests)


def dataset_name(settings, project_root) -> str:
    """The configured dataset, else one per project: "memsift-<project key>"."""
    from memsift.paths import project_key

    return settings["cognee.dataset"] or f"memsift-{project_key(project_root)}"


def state_path(settings, project_root) -> Path:
    return settings.paths.project_dir(project_root) / "cognee-sync.json"


def queue_path(settings, project_root) -> Path:
    return settings.paths.project_dir(project_root) / "cognee-queue.jsonl"


def content_md5(text: str) -> str:
    """How Cognee names a text item: text_<md5 of the exact bytes>."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()
