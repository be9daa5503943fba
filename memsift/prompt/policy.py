"""The numbers the prompt cascade (cascade.py) runs under: each step's budget, and the policy
that turns the judge's scores into what is added (when there is no search at all, the score an
item needs, when the notes answered, how many candidates are judged). docs/cascade.md gives
the reasons."""

from __future__ import annotations

# --- Budgets (seconds). The host waits on the whole path before the model sees the prompt.
LOCAL_PROMPT_S = 1.0  # offline judge: the whole path takes ~0.2 s; a stuck disk must not cost 2 s
# Each judge step's own budget when the judge is an LLM (one round trip each). The local judge
# waits on nothing but the CPU, so its steps share the prompt budget instead.
KIND_S = 0.6  # one classification question
# The same question to a typed decision API, the worth question beside it: Jev's published
# medians are 0.43 to 0.65 s a request, so 0.6 s would cut off half its answers (and count the
# rest as slow). The notes and passages are judged meanwhile: the budget costs no extra wait.
DECISION_KIND_S = 1.0
NOTES_S = 0.8  # cached note vectors + one scoring call over the nearest notes
WORTH_S = 0.5  # one yes/no question
PASSAGES_S = 0.8  # one scoring call over the passages the search returned

# --- Policy. Judge scores are probabilities that an item answers the message; each backend
# states its own threshold. The margins below are shares of the headroom above it (1 - the
# threshold), so the policy holds however the judge is calibrated.
SEARCH_P_MIN = 0.15  # below this mass on the kinds that call for memory: no search at all
KIND_DOUBT_SHARE = 0.7  # the less sure the kind is to need memory, the surer an item must be
MAX_THRESHOLD_SHARE = 0.93  # ...but a near-certain answer still gets through a doubtful kind
PASSAGE_EXTRA_SHARE = 0.25  # the long-term store holds on-topic passages that do not answer
NOTES_ANSWERED_SHARE = 0.5  # a note this far above the threshold answers: no long-term search
NOTE_CANDIDATES = 12  # notes nearest the message go to the judge; far ones cannot answer
PASSAGE_CANDIDATES = 16  # passages asked of the store: the answer is often not in the top 8
KEEP_SCORE = 0.5  # an item is added at this score when the judge states no threshold
WORTH_MIN = 0.25  # below this the subject is not one memory keeps: no long-term search


def above(threshold: float, share: float) -> float:
    """`share` of the way from `threshold` to certainty."""
    return threshold + (1.0 - threshold) * share


def item_threshold(keep: float, search_p: float) -> float:
    """The score an item needs: the judge's threshold when the message surely calls for
    memory, higher as that gets doubtful (the kind model errs; a sure answer still counts)."""
    return min(above(keep, MAX_THRESHOLD_SHARE), above(keep, KIND_DOUBT_SHARE * (1.0 - search_p)))
