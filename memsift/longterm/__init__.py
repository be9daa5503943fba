"""Long-term memory: the embedded store by default, a Cognee server when configured."""

from __future__ import annotations

from memsift.longterm.base import LongTermError, LongTermStore, Passage

__all__ = ["LongTermError", "LongTermStore", "Passage", "get_store"]


def get_store(settings, project_root) -> LongTermStore:
    if settings["cognee.url"]:
        from memsift.longterm.cognee import CogneeStore

        return CogneeStore.from_settings(settings, project_root)
    from memsift.longterm.local import LocalStore

    return LocalStore.for_project(settings, project_root)
