"""The sure forms of message the local judge decides by rule: "thanks" is a reaction, "commit
this" an action. Kept free of numpy and the embedding model, so a message the rules decide
costs the hook process no model import at all (the prompt path checks these first)."""

from __future__ import annotations

import re

from memsift.judge.base import KINDS

RULE_CONFIDENCE = 0.96  # a rule is sure, but leaves the other kinds a little mass


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_REACTIONS = word_set("""thanks thank you thx ty tysm ok okay k kk cool nice great perfect good
awesome yes yep yeah yup sure fine lgtm right agreed correct exactly nope no nah wow brilliant
sweet love it works got it i see makes sense fair hmm meh oops haha lol go ahead
👍 👌 🙏 ✅ 🎉""")
_REACTION_PHRASES = frozenset({"looks good", "looks good to me", "thank you", "sounds good",
                               "go ahead", "makes sense", "got it", "good catch", "my bad",
                               "not quite", "that's wrong", "thats wrong", "you're right",
                               "love it"})
_ACTIONS = re.compile(
    r"^(ok |okay |now |pls |please |then |and )?(commit( (this|it|that|everything|all))?"
    r"( and push)?|push( (it|this|that))?|run (the )?(tests|test suite|linter|suite)( again)?"
    r"|rerun (the )?(tests|ci)|merge( it| this)?|deploy( it)?|ship it to \w+|open a pr"
    r"|tag (it|this)( as \S+)?)( pls| please| now)?$")


def rule_kind(message: str) -> str | None:
    """"reaction" or "action" when the message is one of the sure forms, else None."""
    text = re.sub(r"[!.,:;]+", " ", message.strip().lower())
    text = " ".join(text.split())
    if not text:
        return "reaction"
    if text in _REACTION_PHRASES or (len(text.split()) <= 3 and
                                     all(w in _REACTIONS for w in text.split())):
        return "reaction"
    if _ACTIONS.match(text):
        return "action"
    return None


def sure(kind: str) -> dict[str, float]:
    """The kind distribution of a rule: RULE_CONFIDENCE on `kind`, the rest spread evenly."""
    rest = (1.0 - RULE_CONFIDENCE) / (len(KINDS) - 1)
    return {k: (RULE_CONFIDENCE if k == kind else rest) for k in KINDS}
