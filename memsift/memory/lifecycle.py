"""Memory that lives: acts and salience, fading, supersession, reinforcement, rules.

Five parts, one module each (acts, fading, supersede, rules, and the terms they share); this
module is the one API the rest of memsift uses. Pure functions only (no files, no clock of
their own): the cascade, the session-end worker and `memsift consolidate` call them with the
notes, the time and the state they have read. docs/lifecycle.md tells the whole story.

- Every note has an act (what kind of utterance made it) and a salience in 0..1: the higher of
  a floor set by the act and who said it, and the intensity of how it was said, judged against
  that user's usual tone.
- Retrievability follows the FSRS power forgetting curve R(t, S) = (1 + F*t/S)^D, with the
  stability S (days until R falls to 0.9) seeded by salience and moved by reinforcement.
  Retrievability orders and breaks ties; nothing is ever deleted for fading.
- A later correction or retraction on the same subject supersedes the older note: the old one
  stays in the file with superseded_by=<id> and leaves the prompt path.
- Rules (team rules, hard constraints) are added whenever their subject comes up, within
  their own share of the character budget.
"""

from __future__ import annotations

from memsift.memory.acts import (  # noqa: F401 - the lifecycle API
    ABSOLUTE_WEIGHT,
    ACT_FLOOR,
    ACTS,
    AGENT,
    CAPS_WEIGHT,
    COMMITMENT,
    CORRECTION,
    DECISION,
    DEFAULT_BASELINE,
    DOUBLE_EXCLAIM_WEIGHT,
    EMPHASIS_CAP,
    EXCLAIM_WEIGHT,
    MIN_BASELINE_MESSAGES,
    MIN_SPREAD,
    OBSERVATION,
    RETRACTION,
    ROUTINE,
    RULE_FLOOR,
    SPIKE_FULL,
    USER,
    Baseline,
    act_floor,
    annotate,
    classify_act,
    emphasis,
    intensity,
    is_rule,
    looks_like_rule,
    note_act,
    note_salience,
    salience,
    tone_baseline,
)
from memsift.memory.fading import (  # noqa: F401 - the lifecycle API
    CONTRADICT_FACTOR,
    CONTRADICTED,
    DECAY,
    FACTOR,
    FADED_R,
    S_CAP,
    S_MAX,
    S_MIN,
    SCORE_BAND,
    USE_GAIN,
    USE_MIN_TERMS,
    USED,
    apply_usage,
    as_note,
    days_between,
    distinctive_terms,
    initial_stability,
    note_retrievability,
    note_stability,
    rank,
    reinforced,
    retrievability,
    usage,
    weakened,
)
from memsift.memory.rules import (  # noqa: F401 - the lifecycle API
    RULE_COS,
    RULE_CUE_WORDS,
    RULE_MIN_TERMS,
    RULE_SUBJECT_SHARE,
    RULES_SHARE,
    rule_applies,
    rule_terms,
    rules_budget,
    rules_for,
)
from memsift.memory.supersede import (  # noqa: F401 - the lifecycle API
    COMMON_TERM_SHARE,
    DUPLICATE_COS,
    DUPLICATE_JACCARD,
    SUPERSEDE_COS,
    SUPERSEDE_LEXICAL_SHARE,
    SUPERSEDE_MIN_TERMS,
    SUPERSEDING_ACTS,
    Link,
    Similarity,
    explicit_old_terms,
    find_links,
    is_superseded,
    near_duplicate,
    same_subject,
    superseded_ids,
    supersedes,
    visible,
)
from memsift.memory.terms import (  # noqa: F401 - the lifecycle API
    STOPWORDS,
    cosine,
    key_terms,
)
