"""`memsift bench --judge`: the local decision model on its held-apart labelled data.

Prints 11-way kind accuracy and search/no-search accuracy on the "test" rows of kinds.jsonl
(never fitted), the item-score AUC and F1 at the threshold on held-out pairs, the worth-keeping
accuracy, the same judge on the labelled corpus's validation sessions (kinds in context, AUC
of answers against same-subject items, reminders found and added for nothing), the same on
the chit-chat groups held apart (corpus/held-pairs), the fresh-process wall time of one judged
message, and the install footprint.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from memsift.judge.base import SEARCH_KINDS, needs_search

FRESH_RUNS = 20  # fresh processes timed for the wall-time percentiles
OTHER_ANSWERS = 3  # held chit-chat: the same people's answers to other questions per group
INSTALL_BEFORE_MODELS_MB = 143.6  # the default install before memsift shipped trained weights
TARGETS = {"kind_accuracy": 0.90, "search_accuracy": 0.95, "fresh_p50_ms": 250,
           "install_mb": INSTALL_BEFORE_MODELS_MB + 25}  # they may add at most 25 MB
_JUDGE_ONE = (
    "from memsift.judge.local import LocalJudge\n"
    "j = LocalJudge()\n"
    "k = j.kind({msg!r})\n"
    "s = j.score({msg!r}, ['The ledger uses Postgres for multi-row transactions.'])\n"
)


def kind_report() -> dict:
    from memsift.judge.local import LocalJudge
    from memsift.judge.train_kinds import read_jsonl

    judge = LocalJudge()
    rows = [r for r in read_jsonl("kinds.jsonl") if r["split"] == "test"]
    right = search_right = 0
    misses = []
    for row, probs in zip(rows, judge.kinds([r["text"] for r in rows])):
        guess = max(probs, key=probs.get)
        right += guess == row["kind"]
        search_right += (needs_search(probs) >= 0.5) == (row["kind"] in SEARCH_KINDS)
        if guess != row["kind"]:
            misses.append(f"{row['kind']} -> {guess}: {row['text']}")
    return {"kind_rows": len(rows), "kind_accuracy": right / len(rows),
            "search_accuracy": search_right / len(rows), "kind_misses": misses}


def pair_report() -> dict:
    from memsift.judge.local import LocalJudge
    from memsift.judge.train_kinds import auc, read_jsonl
    from memsift.model.embed import embed

    judge = LocalJudge()
    rows = [r for r in read_jsonl("item_pairs.jsonl") if r["split"] == "test"]
    answers = [r["answer"] for r in rows]
    scores, labels, hard_scores, hard_labels = [], [], [], []
    answer_vecs = embed(answers)
    for i, row in enumerate(rows):
        items = [row["answer"], row["same_subject"]] + [a for j, a in enumerate(answers) if j != i]
        vecs = np.vstack([answer_vecs[i], embed([row["same_subject"]]),
                          np.delete(answer_vecs, i, axis=0)])
        got = judge.score_vectors(judge.embed_message(row["message"]), vecs, row["message"], items)
        scores += got
        labels += [1] + [0] * (len(items) - 1)
        hard_scores += got[:2]
        hard_labels += [1, 0]
    s, y = np.asarray(scores), np.asarray(labels)
    kept = s >= judge.threshold()
    return {"pair_messages": len(rows), "item_auc": auc(s, y),
            "item_auc_same_subject": auc(np.asarray(hard_scores), np.asarray(hard_labels)),
            "threshold": judge.threshold(),
            "answers_kept": float(kept[y == 1].mean()),
            "non_answers_kept": float(kept[y == 0].mean())}


def corpus_report(heads_file: Path | None = None) -> dict:
    """The shipped heads on the corpus's validation sessions (projects never trained on), read
    as the prompt path reads them: each message with its session's turns before it, the
    nearest notes and passages scored per group by LocalJudge, the cascade's policy on top
    (train_judge.decide). Empty when the corpus is not beside the package (a wheel install)."""
    from memsift.judge.corpus import CORPUS, read_corpus
    from memsift.judge.local import LocalJudge
    from memsift.model.embed import embed
    from memsift.model.lexical import rerank
    from memsift.training.thresholds import auc_against_near, decide, notes_of

    turns = [t for t in read_corpus((CORPUS,)) if t.split == "val"] if CORPUS.exists() else []
    if not turns:
        return {}
    judge = LocalJudge(heads_file) if heads_file else LocalJudge()
    item_vectors: dict[str, np.ndarray] = {}
    kinds, scores, where, right, search_right = [], [], [], 0, 0
    for n, turn in enumerate(turns):
        if turn.session not in item_vectors:
            item_vectors[turn.session] = embed([i.text for i in turn.items])
        vectors = item_vectors[turn.session]
        judge.set_turns([(role, text) for user, reply in turn.before
                         for role, text in (("user", user), ("assistant", reply))])
        probs = judge.kind(turn.user)
        kinds.append(probs)
        right += max(probs, key=probs.get) == turn.kind
        search_right += (needs_search(probs) >= 0.5) == (turn.kind in SEARCH_KINDS)
        message = judge.embed_message(turn.user)
        notes = notes_of(turn)
        for source, keep in (("notes", 12), ("longterm", 16)):
            rows = [k for k, i in enumerate(turn.items) if (i.id in notes) == (source == "notes")]
            if not rows:
                continue
            texts = [turn.items[k].text for k in rows]
            picked = [rows[j] for j in rerank(turn.user, texts, vectors[rows] @ message, keep)]
            got = judge.score_vectors(message, vectors[picked], turn.user,
                                      [turn.items[k].text for k in picked])
            scores += got
            where += [(n, turn.items[k].id) for k in picked]
    search_p = np.asarray([needs_search(p) for p in kinds])
    counts = decide(turns, np.asarray(scores), where, search_p, judge.threshold(),
                    passage_share=judge.passage_share())
    return {"corpus_turns": len(turns), "corpus_kind_accuracy": right / len(turns),
            "corpus_search_accuracy": search_right / len(turns),
            "corpus_item_auc_near": auc_against_near(turns, np.asarray(scores), where),
            "corpus_found": counts["found"], "corpus_needs": counts["need"],
            "corpus_for_nothing": counts["for_nothing"], "corpus_nothing": counts["nothing"],
            "corpus_lost": {k: counts[k]
                            for k in ("gated", "not_candidate", "below_bar", "dropped")}}


def held_pairs_report(paths: list[Path] | None = None, heads_file: Path | None = None) -> dict:
    """The shipped judge on corpus/held-pairs (groups no trainer reads: chit-chat between two
    people, a line that answers a question about them and the same people's lines that do
    not), each group read alone after its reply: the AUC of answers against those near misses
    and how many of each the threshold keeps; and the same against the same people's answers
    to other questions (OTHER_ANSWERS of them), which are written as fully as the answer while
    its near misses are often shorter; and how many of each the cascade keeps, its checks of
    chat lines applied too (conversation.may_answer). Empty without the files (a wheel
    install)."""
    from memsift.judge.corpus import (
        CORPUS,
        answers_by_stem,
        held_pair_files,
        read_pair_files,
        stem,
    )
    from memsift.judge.local import LocalJudge
    from memsift.judge.train_kinds import auc
    from memsift.model.embed import embed
    from memsift.prompt.conversation import may_answer, names, speakers_of

    groups = read_pair_files(held_pair_files(CORPUS) if paths is None else paths)
    if not groups:
        return {}
    judge = LocalJudge(heads_file) if heads_file else LocalJudge()
    by_stem = answers_by_stem(groups)
    answers, near, others, first, first_of_answers, compared = [], [], [], 0, 0, 0
    answer_passes, near_passes = [], []  # the cascade's checks besides the score
    for group in groups:
        judge.set_turns([("assistant", group["reply_before"])] if group["reply_before"] else [])
        query, message = judge.embed_message(group["message"]), group["message"]
        items = [group["answer"], *group["near"]]
        got = list(judge.score_vectors(query, embed(items), message, items))
        answers.append(got[0])
        near += got[1:]
        wanted, speakers = names(message), speakers_of(items)
        answer_passes.append(may_answer(items[0], wanted, speakers))
        near_passes += [may_answer(i, wanted, speakers) for i in items[1:]]
        first += all(got[0] > other for other in got[1:])
        # the same people's answers to other questions: written as fully as this one's answer
        # (its near misses are often shorter), so length and a photo's caption tell nothing
        rest = [a for a in by_stem[stem(group["project"])] if a != group["answer"]]
        if rest:
            items = [group["answer"], *rest[:OTHER_ANSWERS]]
            got = list(judge.score_vectors(query, embed(items), message, items))
            others += got[1:]
            first_of_answers += all(got[0] > other for other in got[1:])
            compared += 1
    scores = np.asarray(answers + near)
    labels = np.asarray([1] * len(answers) + [0] * len(near))
    bar = judge.threshold()
    report = {"held_groups": len(groups), "held_auc": auc(scores, labels),
              "held_answer_first": first / len(groups),
              "held_answers_kept": float(np.mean(np.asarray(answers) >= bar)),
              "held_near_kept": float(np.mean(np.asarray(near) >= bar)),
              "held_answers_kept_checked": float(np.mean(
                  (np.asarray(answers) >= bar) & np.asarray(answer_passes))),
              "held_near_kept_checked": float(np.mean(
                  (np.asarray(near) >= bar) & np.asarray(near_passes)))}
    if others:
        report.update(
            held_auc_other_answers=auc(np.asarray(answers + others),
                                       np.asarray([1] * len(answers) + [0] * len(others))),
            held_answer_first_of_answers=first_of_answers / compared,
            held_other_answers_kept=float(np.mean(np.asarray(others) >= bar)))
    return report


def worth_report() -> dict:
    from memsift.judge.local import LocalJudge
    from memsift.judge.train_kinds import read_jsonl

    judge = LocalJudge()
    rows = [r for r in read_jsonl("worth.jsonl") if r["split"] == "test"]
    right = sum((judge.worth_keeping(r["text"]) >= 0.5) == r["keep"] for r in rows)
    return {"worth_rows": len(rows), "worth_accuracy": right / len(rows)}


def fresh_process_report(runs: int = FRESH_RUNS) -> dict:
    """Wall time of a new Python process that imports the judge and judges one message with
    one item, as the prompt hook would (the weight cache exists: one warm-up run first)."""
    code = _JUDGE_ONE.format(msg="why did we pick postgres for the ledger?")
    times, cpu = [], []
    for _ in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
        times.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    times, cpu = sorted(times[1:]), cpu[1:]
    return {"fresh_runs": runs, "fresh_p50_ms": statistics.median(times),
            "fresh_p95_ms": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
            "fresh_cpu_p50_ms": statistics.median(cpu),
            # wall time only means something next to how busy the machine was
            "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count()}


def install_report() -> dict:
    """Bytes on disk of memsift's runtime dependencies (not the test extra), recursively.
    memsift itself counts as the files its wheel ships, also where it is installed editable
    (`make setup`), whose record lists a path hook instead of the package and its data."""
    dists = runtime_distributions()
    total = sum(_size(d.locate_file(f)) for name, d in dists.items() if name != "memsift"
                for f in d.files or [])
    return {"install_packages": len(dists), "install_mb": (total + package_bytes()) / 1e6}


def package_bytes() -> int:
    """memsift's package as its wheel holds it: every file under the package directory but
    the bytecode caches (pyproject.toml's package data is data/ and sample/, all of them)."""
    import memsift

    root = Path(memsift.__file__).parent
    return sum(_size(path) for path in root.rglob("*")
               if path.is_file() and "__pycache__" not in path.parts)


def runtime_distributions() -> dict[str, metadata.Distribution]:
    """memsift and everything its default install pulls in (extras left out)."""
    names, found = ["memsift"], {}
    while names:
        name = names.pop().lower().replace("_", "-")
        if name in found:
            continue
        try:
            found[name] = dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        names.extend(_req_name(req) for req in dist.requires or [] if "extra ==" not in req)
    return found


def _req_name(requirement: str) -> str:
    for i, char in enumerate(requirement):
        if not (char.isalnum() or char in "-_."):
            return requirement[:i]
    return requirement


def _size(path) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def main(as_json: bool = False) -> None:
    report = {**kind_report(), **pair_report(), **worth_report(), **corpus_report(),
              **held_pairs_report(),
              **fresh_process_report(), **install_report()}
    if as_json:
        print(json.dumps(report, indent=2))
        return
    _print_table(report)


def _print_table(r: dict) -> None:
    def line(label: str, value: str, target: str = "") -> None:
        print(f"{label:<44}{value:>12}  {target}")

    line(f"kind accuracy, 11 kinds ({r['kind_rows']} held out)", f"{r['kind_accuracy']:.3f}",
         ">= 0.90")
    line("search / no search accuracy", f"{r['search_accuracy']:.3f}", ">= 0.95")
    line(f"item score AUC ({r['pair_messages']} held-out messages)", f"{r['item_auc']:.3f}")
    line("item score AUC, answer vs same subject", f"{r['item_auc_same_subject']:.3f}")
    line(f"kept at threshold {r['threshold']:.2f}: answers", f"{r['answers_kept']:.3f}")
    line("kept at threshold: non-answers", f"{r['non_answers_kept']:.3f}")
    line(f"worth keeping accuracy ({r['worth_rows']} held out)", f"{r['worth_accuracy']:.3f}")
    if r.get("corpus_turns"):
        line(f"corpus validation ({r['corpus_turns']} turns): kinds",
             f"{r['corpus_kind_accuracy']:.3f}")
        line("  search / no search", f"{r['corpus_search_accuracy']:.3f}", ">= 0.90")
        line("  item AUC, answer vs same subject (near)", f"{r['corpus_item_auc_near']:.3f}")
        line("  reminders found", f"{r['corpus_found']}/{r['corpus_needs']}",
             f"{r['corpus_found'] / max(1, r['corpus_needs']):.0%}, >= 60%")
        line("  added for nothing", f"{r['corpus_for_nothing']}/{r['corpus_nothing']}",
             f"{r['corpus_for_nothing'] / max(1, r['corpus_nothing']):.1%}, <= 6%")
        lost = r["corpus_lost"]
        line("  needs that got nothing: search gated off", str(lost["gated"]))
        line("    answer not among the judged", str(lost["not_candidate"]))
        line("    judged below the bars", str(lost["below_bar"]))
        line("    dropped: the session already held it", str(lost["dropped"]))
    if r.get("held_groups"):
        line(f"chit-chat held apart ({r['held_groups']} groups): AUC", f"{r['held_auc']:.3f}")
        line("  answer ranked above its near misses", f"{r['held_answer_first']:.3f}")
        line("  kept at threshold: answers", f"{r['held_answers_kept']:.3f}")
        line("  kept at threshold: near misses", f"{r['held_near_kept']:.3f}")
        line("  kept by the cascade (its chat-line checks too): answers",
             f"{r['held_answers_kept_checked']:.3f}")
        line("  kept by the cascade: near misses", f"{r['held_near_kept_checked']:.3f}")
    if r.get("held_auc_other_answers") is not None:
        line("  against other questions' answers: AUC", f"{r['held_auc_other_answers']:.3f}")
        line("    answer ranked above them", f"{r['held_answer_first_of_answers']:.3f}")
        line("    kept at threshold: other answers", f"{r['held_other_answers_kept']:.3f}")
    line(f"fresh process, one judged message (n={r['fresh_runs']})",
         f"p50 {r['fresh_p50_ms']:.0f} ms", f"p95 {r['fresh_p95_ms']:.0f} ms, p50 <= 250 ms")
    line("  same, CPU time (user + system)", f"p50 {r['fresh_cpu_p50_ms']:.0f} ms",
         f"load average {r['load_average_1m']:.1f} on {r['cpus']} CPUs")
    line(f"install footprint ({r['install_packages']} packages)", f"{r['install_mb']:.1f} MB",
         f"<= {TARGETS['install_mb']:.1f} MB")
    for miss in r["kind_misses"]:
        print("  miss:", miss)
