"""The labelled sessions in bench/sessions stay well-formed (docs/bench.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memsift.judge.base import KINDS, SEARCH_KINDS

SESSIONS = sorted((Path(__file__).resolve().parent.parent / "bench" / "sessions").glob("*.json"))


def test_there_are_sessions():
    assert len(SESSIONS) >= 8


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_a_session_is_well_formed(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    ids = [x["id"] for x in data["notes"] + data["memory"]]
    assert len(ids) == len(set(ids))
    assert all(x["written"] < data["now"] for x in data["notes"] + data["memory"])
    expecting = 0
    for turn in data["turns"]:
        assert turn["kind"] in KINDS and turn["user"].strip() and turn["why"].strip()
        assert set(turn["expect"]) <= set(ids)
        if turn["expect"]:
            expecting += 1
            assert turn["kind"] in SEARCH_KINDS  # a no-search kind never expects a reminder
    assert len(data["turns"]) == 80 and expecting == 16
