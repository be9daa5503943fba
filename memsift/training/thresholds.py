"""The cascade's policy on the training corpus's judged candidates (memsift.prompt.policy):
what a turn would get at a threshold (found, added for nothing, wrong), the lowest threshold
that keeps additions for nothing under a share on the tune projects, and how well the scores
tell answers from same-subject items that do not answer. The judge trainer (training/judge.py)
chooses its threshold and reports with these; `memsift bench --judge` counts with them too."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memsift.judge.corpus import Turn

MAX_FOR_NOTHING = 0.06  # the threshold keeps additions for nothing under this on the tune set
# ... and on the tune set's long sessions alone: a day's work on a mature project, as users'
# sessions are, holds more same-subject turns that need nothing than the short ones do.
LONG_SESSION_TURNS = 60
# The passages' extra bar the trainer chooses among, with the threshold, on the tune projects
# (memsift.prompt.policy.PASSAGE_EXTRA_SHARE is what a judge that states none gets).
PASSAGE_SHARES = (0.0, 0.1, 0.25, 0.4)


def decide(turns: Sequence[Turn], scores: np.ndarray, where: list[tuple[int, str]],
           search_p: np.ndarray, keep: float, worth: np.ndarray | None = None,
           passage_share: float | None = None) -> dict[str, int]:
    """The cascade's policy (prompt/policy.py) on judged candidates: no search below
    SEARCH_P_MIN; notes kept at the judge's threshold (these heads read the kind already), the long-term search skipped when a note
    answers well above it or the subject is not worth keeping; passages kept a share higher
    (`passage_share`, else PASSAGE_EXTRA_SHARE);
    then the conversation filter (items added earlier in the session, and items whose words
    the session's text before the turn holds: Turn.held), and of what is left the best item
    and a near one added. Counts as the replay bench does, and where the needs that got
    nothing were lost: the search gate, the answer not among the judged candidates, judged
    below the bars, or kept and then dropped by the conversation filter."""
    from memsift.prompt.policy import (
        NOTES_ANSWERED_SHARE,
        PASSAGE_EXTRA_SHARE,
        SEARCH_P_MIN,
        WORTH_MIN,
        above,
    )
    from memsift.prompt.selection import MAX_ITEMS, NEAR_BEST_SHARE

    share = PASSAGE_EXTRA_SHARE if passage_share is None else passage_share

    groups: dict[int, dict[str, list[tuple[float, str]]]] = {}
    for score, (n, item_id) in zip(scores, where):
        source = group_of(turns, n, item_id)[1]
        groups.setdefault(n, {}).setdefault(source, []).append((float(score), item_id))
    out = {"need": 0, "found": 0, "nothing": 0, "for_nothing": 0, "wrong": 0,
           "gated": 0, "not_candidate": 0, "below_bar": 0, "dropped": 0}  # the last four: needs
    given: dict[int, set[str]] = {}  # per session (its items list), the ids added so far
    for n, turn in enumerate(turns):
        out["need" if turn.expect else "nothing"] += 1
        if search_p[n] < SEARCH_P_MIN:
            out["gated"] += bool(turn.expect)
            continue
        threshold = keep  # LocalJudge.scores_read_the_kind: no margin for a doubtful kind
        found = groups.get(n, {})
        kept = [(s, i) for s, i in found.get("notes", []) if s >= threshold]
        answered = kept and max(kept)[0] >= above(keep, NOTES_ANSWERED_SHARE)
        if not answered and (worth is None or worth[n] >= WORTH_MIN):
            bar = above(threshold, share)
            kept += [(s, i) for s, i in found.get("longterm", []) if s >= bar]
        if not kept:
            if turn.expect:
                judged = {i for group in found.values() for _, i in group}
                out["below_bar" if judged & turn.expect else "not_candidate"] += 1
            continue
        session = given.setdefault(id(turn.items), set())
        kept = [(s, i) for s, i in kept if i not in session and i not in turn.held]
        if not kept:
            out["dropped"] += bool(turn.expect)
            continue
        best = max(s for s, _ in kept)
        added = [i for s, i in sorted(kept, reverse=True)
                 if s >= best - NEAR_BEST_SHARE * (1.0 - keep)][:MAX_ITEMS]
        session.update(added)
        if not turn.expect:
            out["for_nothing"] += 1
        elif set(added) & turn.expect:
            out["found"] += 1
        else:
            out["wrong"] += 1
    return out


def notes_of(turn: Turn) -> set[str]:
    return {i.id for i in turn.items if i.source == "notes"}


def group_of(turns: Sequence[Turn], n: int, item_id: str) -> tuple[int, str]:
    """(turn number, "notes" or "longterm"): the group a candidate was judged in, as the
    cascade judges the nearest notes apart from the passages."""
    return n, "notes" if item_id in notes_of(turns[n]) else "longterm"


def choose_threshold(turns, scores, where, search_p, worth=None,
                     passage_share: float | None = None) -> float:
    """The lowest threshold whose additions for nothing stay under MAX_FOR_NOTHING on the
    tune turns, and on those of the long sessions among them (`by_shape`)."""
    parts = by_shape(turns, scores, where, search_p, worth)
    for threshold in np.round(np.arange(0.05, 0.99, 0.01), 2):
        counts = [decide(*part[:4], float(threshold), part[4], passage_share) for part in parts]
        if all(c["for_nothing"] <= MAX_FOR_NOTHING * max(1, c["nothing"]) for c in counts):
            return float(threshold)
    return 0.99


def by_shape(turns, scores, where, search_p, worth=None) -> list[tuple]:
    """The judged candidates whole, and those of the sessions of LONG_SESSION_TURNS or more
    apart when there are some: each (turns, scores, where, search_p, worth) for decide()."""
    length: dict[tuple[str, str], int] = {}
    for turn in turns:
        length[turn.project, turn.session] = length.get((turn.project, turn.session), 0) + 1
    keep = [n for n, turn in enumerate(turns)
            if length[turn.project, turn.session] >= LONG_SESSION_TURNS]
    whole = (turns, scores, where, search_p, worth)
    if not keep or len(keep) == len(turns):
        return [whole]
    index = {n: k for k, n in enumerate(keep)}
    rows = [r for r, (n, _) in enumerate(where) if n in index]
    return [whole, ([turns[n] for n in keep], np.asarray(scores)[rows],
                    [(index[where[r][0]], where[r][1]) for r in rows],
                    np.asarray(search_p)[keep], None if worth is None else np.asarray(worth)[keep])]


def choose_policy(turns, scores, where, search_p, worth=None,
                  shares: Sequence[float] = PASSAGE_SHARES) -> tuple[float, float]:
    """(threshold, passage share): for each share its lowest threshold under MAX_FOR_NOTHING
    (choose_threshold), and of those the pair that finds the most on the tune projects (the
    higher share on a tie: the stricter bar for the same reminders)."""
    best: tuple[int, float, float] | None = None
    for share in sorted(shares, reverse=True):
        threshold = choose_threshold(turns, scores, where, search_p, worth, share)
        found = decide(turns, scores, where, search_p, threshold, worth, share)["found"]
        if best is None or found > best[0]:
            best = (found, threshold, share)
    assert best is not None, "no passage share to choose from"
    return best[1], best[2]


def auc_against_near(turns, scores, where) -> float:
    """AUC of answers against same-subject items that do not answer (the `near` labels)."""
    pos, neg = [], []
    for score, (n, item_id) in zip(scores, where):
        if item_id in turns[n].expect:
            pos.append(score)
        elif item_id in turns[n].near:
            neg.append(score)
    if not pos or not neg:
        return float("nan")
    p, q = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > q).sum() + 0.5 * (p == q).sum()) / (p.size * q.size))
