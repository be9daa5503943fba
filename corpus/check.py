"""Validate the labelled corpus: python corpus/check.py [FILE...] (by default every session of
sessions/ and keep-sessions/, keep-labels.jsonl, cross-pairs/, next/cross-pairs/ and held-pairs/)."""

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
KEEP_LABELS = ROOT.parent / "keep-labels.jsonl"
KEEP_ONLY = ROOT.parent / "keep-sessions"  # sessions only the keep decision trains on
CROSS_PAIRS = ROOT.parent / "cross-pairs"  # groups only the cross-encoder trains on
STAGED_PAIRS = ROOT.parent / "next" / "cross-pairs"  # written, not trained on yet
HELD_PAIRS = ROOT.parent / "held-pairs"  # groups never trained on: a check of the cross-encoder
PAIR_KEYS = {"project", "message", "reply_before", "answer", "near"}


def numbered_lines(path: Path):
    """(where, line) for each line of a JSON-lines file that is not blank."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            yield f"{path.name} line {number}", line


def check_cross_pairs(paths: list[Path], val_projects: set[str]) -> tuple[list[str], int]:
    """The cross-encoder's extra groups: the five keys, one to three near misses unlike the
    answer, each project once and none of the validation split's. Returns errors and groups."""
    errors, seen, groups = [], {}, 0
    for where, line in (pair for path in paths for pair in numbered_lines(path)):
        try:
            row = json.loads(line)
        except ValueError as exc:
            errors.append(f"{where}: unreadable: {exc}")
            continue
        if not isinstance(row, dict) or set(row) != PAIR_KEYS:
            errors.append(f"{where}: the keys must be {sorted(PAIR_KEYS)}")
            continue
        texts = [row["message"], row["answer"], *row["near"]] \
            if isinstance(row["near"], list) else []
        if not 1 <= len(row["near"] or []) <= 3 or not all(
                isinstance(t, str) and t.strip() for t in texts):
            errors.append(f"{where}: a message, an answer and one to three near misses")
            continue
        if row["answer"] in row["near"]:
            errors.append(f"{where}: the answer is also a near miss")
        if row["project"] in seen:
            errors.append(f"{where}: project {row['project']} is also {seen[row['project']]}")
        if row["project"] in val_projects:
            errors.append(f"{where}: project {row['project']} is a validation project")
        seen[row["project"]] = where
        groups += 1
    return errors, groups


def check_keep_labels(path: Path, root: Path) -> tuple[list[str], int]:
    """The keep labels file: each row names a session under root, as many turns as it has,
    and a one-line fact for each kept turn. Returns the errors and the turns kept."""
    errors, seen, kept_turns = [], set(), 0
    for where, line in numbered_lines(path):
        try:
            row = json.loads(line)
            session, turns, kept = row["session"], row["turns"], row["kept"]
        except (ValueError, KeyError, TypeError) as exc:
            errors.append(f"{where}: unreadable: {exc}")
            continue
        if session in seen:
            errors.append(f"{where}: {session} is labelled twice")
        seen.add(session)
        kept_turns += len(kept)
        source = root / f"{session}.json"
        if not source.is_file():
            errors.append(f"{where}: no session {session}")
            continue
        if turns != len(json.loads(source.read_text(encoding="utf-8"))["turns"]):
            errors.append(f"{where}: {session} has another number of turns than {turns}")
        for turn, fact in kept.items():
            if not turn.isdigit() or int(turn) >= turns:
                errors.append(f"{where}: turn {turn} is not one of the session's")
            elif not isinstance(fact, str) or not fact.strip() or "\n" in fact \
                    or len(fact) > MAX_FACT:
                errors.append(f"{where}: turn {turn} needs a one-line fact of at most "
                              f"{MAX_FACT} characters")
    return errors, kept_turns


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
    files = [Path(arg) for arg in argv] or (sorted(ROOT.glob("*/*.json"))
                                            + sorted(KEEP_ONLY.glob("*/*.json")))
    names: dict[str, Path] = {}
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
        if data["name"] in names:
            print(f"{path}: the name {data['name']} is also {names[data['name']]}'s")
            failed += 1
        names[data["name"]] = path
        splits_by_project[data.get("project", data["name"])].add(data["split"])
        turns = data["turns"]
        totals["sessions"] += 1
        totals["turns"] += len(turns)
        totals["expected"] += sum(1 for turn in turns if turn["expect"])
        totals["kept"] += sum(1 for turn in turns if turn["keep"])
        totals[f"split_{data['split']}"] += len(turns)
    if not argv and KEEP_LABELS.is_file():
        label_errors, kept_turns = check_keep_labels(KEEP_LABELS, ROOT)
        for error in label_errors:
            print(error)
        failed += len(label_errors)
        totals["kept_by_rule"] = 0 if label_errors else kept_turns
    if not argv:
        val_projects = {name for name, splits in splits_by_project.items() if "val" in splits}
        pair_errors, groups = check_cross_pairs(
            sorted(CROSS_PAIRS.glob("*.jsonl")) + sorted(STAGED_PAIRS.glob("*.jsonl"))
            + sorted(HELD_PAIRS.glob("*.jsonl")),
            val_projects)
        for error in pair_errors:
            print(error)
        failed += len(pair_errors)
        totals["cross_pairs"] = groups
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
