"""`memsift bench --horizon`: sixty simulated days of one project's memory, replayed.

A scripted history: facts that change and get corrected (the staging host moves twice, the
HTTP library is swapped), team rules, decisions the work keeps coming back to, trivia nobody
ever asks about again. Each day runs through the real pieces with MEMSIFT_NOW set to that day:
the day's prompts go through the prompt cascade (what it added is read back from the audit
log), the day's notes are written to the notes file as the session-end worker would, the
session's usage is recorded and consolidation runs at most once a day.

It prints counts: after each correction, how often the stale fact was added again (should be
never); how often a rule was added when its subject came up (should be every time); where
trivia and decisions stand on the forgetting curve at the end.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memsift.bench import environ as _env

DAYS = 60
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SESSION_END_HOUR = 18  # notes of the day are written when its session ends
CONTRADICTED_DAY = 18  # the user says the staging note is outdated a day before the correction


@dataclass(frozen=True)
class Said:
    """A note the session-end worker keeps on `day`. role: fact | rule | decision | trivia."""

    day: int
    id: str
    text: str
    role: str
    subject: str = ""


@dataclass(frozen=True)
class Ask:
    """One user message on `day`, the agent's reply, and what it is about."""

    day: int
    text: str
    reply: str
    subject: str = ""  # a fact subject, a rule id, a decision id, or "" for none


HISTORY = [
    Said(0, "s1", "Staging host is 10.0.2.5: ./deploy.sh staging ssh-es to deploy@10.0.2.5.",
         "fact", "staging"),
    Said(0, "h1", "The billing client calls the payments API with requests and a 10 s timeout.",
         "fact", "http"),
    Said(1, "r1", "Never apply terraform on a Friday: the on-call rotation is thin at weekends.",
         "rule", "r1"),
    Said(1, "r2", "Never log card data in the payments service, not even masked.", "rule", "r2"),
    Said(2, "d1", "Decided: background jobs run on Celery with Redis as the broker, retries "
         "capped at 5.", "decision", "d1"),
    Said(2, "t1", "The office coffee machine is on the third floor next to the printer.",
         "trivia"),
    Said(3, "d2", "We chose Postgres advisory locks for the nightly invoice job so two runs "
         "never overlap.", "decision", "d2"),
    Said(3, "t2", "Lena's cat is called Pixel and appears in most of her standup calls.",
         "trivia"),
    Said(4, "d3", "We decided on ruff format for all Python code, with a line length of 100.",
         "decision", "d3"),
    Said(4, "t3", "The old Jenkins box was named hal9000 and lived under a desk in Leeds.",
         "trivia"),
    Said(5, "d4", "We decided to send error reports to Sentry, one project per service.",
         "decision", "d4"),  # a decision nobody comes back to: the control for reinforcement
    Said(5, "t4", "The team offsite last spring was in Porto, by the river.", "trivia"),
    Said(19, "s2", "Actually the staging host moved from 10.0.2.5 to 10.0.3.12; ./deploy.sh "
         "staging now ssh-es to deploy@10.0.3.12.", "fact", "staging"),
    Said(25, "h2", "We swapped requests for httpx in the billing client: the payments API "
         "calls use httpx with HTTP/2 and the same 10 s timeout.", "fact", "http"),
    Said(40, "s3", "Actually the staging host moved again from 10.0.3.12 to 10.0.4.7 "
         "(staging.internal); ./deploy.sh staging ssh-es to deploy@10.0.4.7.", "fact",
         "staging"),
]

_STAGING_ASKS = ("deploy this branch to the staging host",
                 "ssh into the staging host and tail the app logs",
                 "deploy to the staging host with deploy.sh",  # the rota's pick on day 18
                 "what's the staging host again?")
_HTTP_ASKS = ("add a retry to the payments API call in the billing client",
              "why does the billing client time out when calling the payments API?")
_TERRAFORM_ASKS = ("apply the terraform plan for the new bucket",
                   "run terraform apply on the network module",
                   "terraform apply the DNS change please")
_CARD_ASKS = ("add debug logging of the card payload in the payments service",
              "log the card data of failed charges so we can debug them")
_DECISION_ASKS = {
    "d1": (("do background jobs still run on Celery with Redis, and are retries capped?",
            "Yes: Celery on the Redis broker, retries capped at 5; the export job follows that."),
           ("what broker and retry cap do our background jobs run with?",
            "Redis as the Celery broker, retries capped at 5.")),
    "d2": (("how do we keep two runs of the nightly invoice job from overlapping?",
            "Take the Postgres advisory lock at the start of the job; a second run waits."),),
    "d3": (("format the new module the way we decided for all Python code",
            "Ran ruff format over the module with a line length of 100."),
           ("which formatter and line length did we decide on for Python code?",
            "ruff format, line length 100.")),
}
_ELSE = (("thanks, looks good", "You're welcome."), ("run the tests", "All 214 tests pass."),
         ("rename the settings button to Preferences", "Renamed it in settings.tsx."))


def current(subject: str, day: int) -> Said:
    """The fact on `subject` that is true on `day` (the latest said before that day's end)."""
    return [s for s in HISTORY if s.subject == subject and s.role == "fact" and s.day <= day][-1]


def _host(day: int) -> str:
    return {"s1": "10.0.2.5", "s2": "10.0.3.12", "s3": "10.0.4.7"}[current("staging", day).id]


def _lib(day: int) -> str:
    return {"h1": "requests", "h2": "httpx"}[current("http", day).id]


def asks_of(day: int) -> list[Ask]:
    """The day's messages: a deterministic rota over the subjects, plus everyday chatter."""
    asks = []
    if day % 3 == 0:
        host = _host(day - 1) if day else _host(0)
        asks.append(Ask(day, _STAGING_ASKS[day // 3 % len(_STAGING_ASKS)],
                        f"Using deploy@{host} via ./deploy.sh staging.", "staging"))
        if day == CONTRADICTED_DAY:  # the user's next message says the note is outdated
            asks.append(Ask(day, "no, that's outdated: the staging host moved to 10.0.3.12 "
                                 "this week", "Noted, deploy@10.0.3.12 from now on."))
    if day % 4 == 1:
        lib = _lib(day - 1)
        asks.append(Ask(day, _HTTP_ASKS[day // 4 % 2],
                        f"The billing client uses {lib} for the payments API with a 10 s "
                        f"timeout; I added the retry around the {lib} call.", "http"))
    if day % 5 == 2:
        asks.append(Ask(day, _TERRAFORM_ASKS[day // 5 % 3], "Plan looks clean.", "r1"))
    if day % 7 == 3:
        asks.append(Ask(day, _CARD_ASKS[day // 7 % 2], "I'll log the charge id only.", "r2"))
    for offset, (name, rota) in enumerate(_DECISION_ASKS.items()):
        if day > 5 and day % 6 == offset:
            text, reply = rota[day // 6 % len(rota)]
            asks.append(Ask(day, text, reply, name))
    text, reply = _ELSE[day % len(_ELSE)]
    asks.append(Ask(day, text, reply))
    return asks


# --- the replay ---------------------------------------------------------------------------------



@dataclass
class Tally:
    """Counts for the report."""

    stale_after_correction: dict[str, list[int]] = field(default_factory=dict)  # [added, asks]
    current_added: dict[str, list[int]] = field(default_factory=dict)  # [added, asks]
    rules: dict[str, list[int]] = field(default_factory=dict)  # [added, asks on the subject]
    rules_off_subject: int = 0  # a rule added to a message not about it
    decisions_added: dict[str, int] = field(default_factory=dict)
    prompts: int = 0
    prompts_with_additions: int = 0


def _stale_ids(subject: str, day: int) -> list[str]:
    """Facts on `subject` superseded by a correction written before `day`."""
    facts = [s for s in HISTORY if s.subject == subject and s.role == "fact" and s.day < day]
    return [s.id for s in facts[:-1]]


def _count(tally: Tally, ask: Ask, added: set[str]) -> None:
    tally.prompts += 1
    tally.prompts_with_additions += bool(added)
    rule_ids = {s.id for s in HISTORY if s.role == "rule"}
    for rule in rule_ids & added:
        if rule != ask.subject:
            tally.rules_off_subject += 1
    if ask.subject in rule_ids:
        row = tally.rules.setdefault(ask.subject, [0, 0])
        row[0] += ask.subject in added
        row[1] += 1
    if ask.subject in ("staging", "http"):
        stale = _stale_ids(ask.subject, ask.day)
        if stale:
            row = tally.stale_after_correction.setdefault(ask.subject, [0, 0])
            row[0] += bool(set(stale) & added)
            row[1] += 1
        row = tally.current_added.setdefault(ask.subject, [0, 0])
        row[0] += current(ask.subject, ask.day - 1 if ask.day else 0).id in added
        row[1] += 1
    if ask.subject in _DECISION_ASKS:
        tally.decisions_added[ask.subject] = tally.decisions_added.get(ask.subject, 0) + (
            ask.subject in added)


def _prompt(project: Path, settings, day: int, ask: Ask, minute: int, parts: dict) -> set[str]:
    from memsift.audit import read_audit
    from memsift.events import Event
    from memsift.prompt.cascade import run_prompt

    when = START + timedelta(days=day, minutes=minute)
    with _env(MEMSIFT_NOW=when.isoformat()):
        run_prompt(Event(host="claude-code", name="UserPromptSubmit", session_id=f"day{day}",
                         cwd=str(project), prompt=ask.text), settings, **parts)
    last = read_audit(n=1, project=str(project), path=settings.paths.audit_file)
    return {item["id"] for item in last[0]["added"]} if last else set()


def _session_end(project: Path, settings, day: int, asks: list[Ask], similarity_for) -> dict:
    from memsift.events import Turn
    from memsift.memory import lifecycle as lc
    from memsift.memory.consolidate import maybe_consolidate, record_session
    from memsift.memory.notes import Note, NotesFile, notes_path

    when = START + timedelta(days=day, hours=SESSION_END_HOUR - START.hour)
    with _env(MEMSIFT_NOW=when.isoformat()):
        said = [s for s in HISTORY if s.day == day]
        others = [a.text for a in asks]
        NotesFile(notes_path(settings, project)).append(
            Note(s.text, s.id, when.date().isoformat(), lc.annotate(s.text, lc.USER, others))
            for s in said)
        turns = [t for a in asks for t in (Turn("user", a.text), Turn("assistant", a.reply))]
        queued = record_session(project, settings, f"day{day}", turns)
        report = maybe_consolidate(project, settings, when, *similarity_for)
    return {"queued": queued, "report": report.to_dict() if report else None}


def replay(home: Path, days: int = DAYS, *similarity_for, **parts) -> dict:
    """Run the history in a fresh memsift home; returns the counts and the final standing.
    `parts` go to the cascade (judge=, embedder=, store=) and `similarity_for` to
    consolidation: the defaults are the real ones."""
    with _env(MEMSIFT_HOME=str(home)):
        from memsift.config import load_settings

        settings = load_settings(strict=False)
        project = home / "project"
        project.mkdir(parents=True, exist_ok=True)
        (project / ".git").mkdir(exist_ok=True)
        tally = Tally()
        reinforced, weakened, links = 0, 0, []
        for day in range(days):
            asks = asks_of(day)
            for minute, ask in enumerate(asks):
                _count(tally, ask, _prompt(project, settings, day, ask, 60 + minute, parts))
            end = _session_end(project, settings, day, asks, similarity_for)
            if end["report"]:
                reinforced += len(end["report"]["reinforced"])
                weakened += len(end["report"]["weakened"])
                links += end["report"]["superseded"] + end["report"]["merged"]
        standing = _standing(project, settings, START + timedelta(days=days))
    return _result(tally, standing, reinforced, weakened, links, days)


def _standing(project: Path, settings, when: datetime) -> dict[str, dict]:
    from memsift.memory import lifecycle as lc
    from memsift.memory.consolidate import note_states
    from memsift.memory.notes import NotesFile, notes_path

    notes = NotesFile(notes_path(settings, project)).read()
    states = note_states(settings, project)
    hidden = {n.key for n in notes} - {n.key for n in lc.visible(notes)}
    return {n.key: {"r": round(lc.note_retrievability(n, when, states), 3),
                    "s": round(lc.note_stability(n, states), 1),
                    "used": int((states.get(n.key) or {}).get("used", 0)),
                    "hidden": n.key in hidden, "act": lc.note_act(n)} for n in notes}


def _result(tally: Tally, standing: dict, reinforced: int, weakened: int, links: list,
            days: int) -> dict:
    role = {s.id: s.role for s in HISTORY}
    trivia = [standing[k]["r"] for k in standing if role.get(k) == "trivia"]
    used = {k: standing[k]["r"] for k in standing if k in _DECISION_ASKS}
    control = {k: standing[k]["r"] for k in standing
               if role.get(k) == "decision" and k not in _DECISION_ASKS}
    return {
        "days": days,
        "prompts": tally.prompts,
        "prompts_with_additions": tally.prompts_with_additions,
        "notes_written": len(HISTORY),
        "notes_kept": len(standing),
        "links": links,
        "stale_added_after_correction": tally.stale_after_correction,
        "current_fact_added": tally.current_added,
        "rules_added_on_subject": tally.rules,
        "rules_added_off_subject": tally.rules_off_subject,
        "decisions_added": tally.decisions_added,
        "reinforced": reinforced,
        "weakened": weakened,
        "trivia_r": sorted(trivia),
        "used_decisions_r": used,
        "unused_decision_r": control,
        "trivia_below_every_used_decision": sum(r < min(used.values(), default=0) for r in trivia),
        "standing": standing,
    }


def main(as_json: bool = False, days: int = DAYS) -> dict:
    with tempfile.TemporaryDirectory(prefix="memsift-horizon-") as tmp:
        result = replay(Path(tmp), days)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)
    return result


def _print(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]horizon[/]: {result['days']} days, {result['prompts']} prompts, "
                  f"{result['notes_written']} notes written, {result['notes_kept']} kept")
    table = Table("check", "count")
    for subject, (added, asks) in result["stale_added_after_correction"].items():
        table.add_row(f"stale {subject} fact added after its correction", f"{added}/{asks}")
    for subject, (added, asks) in result["current_fact_added"].items():
        table.add_row(f"current {subject} fact added", f"{added}/{asks}")
    for rule, (added, asks) in result["rules_added_on_subject"].items():
        table.add_row(f"rule {rule} added when its subject came up", f"{added}/{asks}")
    table.add_row("rules added off their subject", str(result["rules_added_off_subject"]))
    table.add_row("notes reinforced / weakened", f"{result['reinforced']} / {result['weakened']}")
    table.add_row("trivia below every used decision",
                  f"{result['trivia_below_every_used_decision']}/{len(result['trivia_r'])}")
    table.add_row("trivia R at the end", " ".join(f"{r:.2f}" for r in result["trivia_r"]))
    table.add_row("used decisions R", " ".join(f"{k}={r:.2f}" for k, r in
                                               result["used_decisions_r"].items()))
    table.add_row("unused decision R", " ".join(f"{k}={r:.2f}" for k, r in
                                                result["unused_decision_r"].items()))
    console.print(table)

