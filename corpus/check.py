"""Validate the labelled corpus: python corpus/check.py [FILE...] (all sessions by default)."""

import collections
import json
import sys
from pathlib import Path

NOSEARCH = {"reaction", "action", "instruction", "general", "conversation"}
SEARCH = {"decision", "past_choice", "resume", "recurring", "builds_on", "earlier_exchange"}
PROJECT_KINDS = {
    "web", "mobile", "data", "ml", "infra", "embedded", "game", "cli", "library", "docs",
    "research", "personal",
}
MIN_TURNS, MAX_TURNS = 30, 80
MIN_EXPECTED_SHARE = 0.25
MAX_FACT = 300
ROOT = Path(__file__).resolve().parent / "sessions"


def check_session(data: dict) -> list[str]:
    errors = []
    for key in ("name", "project_kind", "split", "summary", "now", "notes", "memory", "turns"):
        if key not in data:
            errors.append(f"missing {key}")
    if errors:
        return errors
    if data["project_kind"] not in PROJECT_KINDS:
        errors.append(f"bad project_kind {data['project_kind']!r}")
    if data["split"] not in ("train", "val"):
        errors.append(f"bad split {data['split']!r}")
    items = data["notes"] + data["memory"]
    ids = [item.get("id") for item in items]
    if len(ids) != len(set(ids)):
        errors.append("duplicate ids")
    for item in items:
        if not isinstance(item.get("text"), str) or not item["text"].strip():
            errors.append(f"item {item.get('id')} has no text")
        if "written" not in item:
            errors.append(f"item {item.get('id')} has no written date")
    known = set(ids)
    turns = data["turns"]
    if not MIN_TURNS <= len(turns) <= MAX_TURNS:
        errors.append(f"{len(turns)} turns, want {MIN_TURNS}-{MAX_TURNS}")
    expected = 0
    for number, turn in enumerate(turns, 1):
        where = f"turn {number}"
        for key in ("user", "assistant", "kind", "expect", "why", "keep"):
            if key not in turn:
                errors.append(f"{where} missing {key}")
        kind = turn.get("kind")
        if kind not in NOSEARCH | SEARCH:
            errors.append(f"{where} bad kind {kind!r}")
        expect = turn.get("expect", [])
        near = turn.get("near", [])
        for item_id in [*expect, *near, *turn.get("restates", [])]:
            if item_id not in known:
                errors.append(f"{where} names unknown id {item_id!r}")
        if set(expect) & set(near):
            errors.append(f"{where} has an id in both expect and near")
        if expect:
            expected += 1
            if kind in NOSEARCH:
                errors.append(f"{where} expects a reminder on the no-search kind {kind}")
        if not isinstance(turn.get("keep"), bool):
            errors.append(f"{where} keep must be true or false")
        elif turn["keep"]:
            fact = turn.get("fact")
            if not isinstance(fact, str) or not fact.strip():
                errors.append(f"{where} is kept but has no fact")
            elif len(fact) > MAX_FACT or "\n" in fact:
                errors.append(f"{where} fact must be one line of at most {MAX_FACT} characters")
    if turns and expected / len(turns) < MIN_EXPECTED_SHARE:
        errors.append(f"{expected} of {len(turns)} turns expect a reminder, want >= 25%")
    return errors


def main(argv: list[str]) -> int:
    files = [Path(arg) for arg in argv] or sorted(ROOT.glob("*/*.json"))
    totals = collections.Counter()
    splits_by_project = collections.defaultdict(set)
    failed = 0
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"{path}: unreadable: {exc}")
            failed += 1
            continue
        errors = check_session(data)
        if errors:
            failed += 1
            for error in errors:
                print(f"{path}: {error}")
            continue
        splits_by_project[data.get("project", data["name"])].add(data["split"])
        turns = data["turns"]
        totals["sessions"] += 1
        totals["turns"] += len(turns)
        totals["expected"] += sum(1 for turn in turns if turn["expect"])
        totals["kept"] += sum(1 for turn in turns if turn["keep"])
        totals[f"split_{data['split']}"] += len(turns)
    for name, splits in splits_by_project.items():
        if len(splits) > 1:
            print(f"project {name} is in both splits")
            failed += 1
    print(" ".join(f"{key} {value}" for key, value in sorted(totals.items())))
    if failed:
        print(f"{failed} file(s) failed")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
