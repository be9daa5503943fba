"""The benchmark's scoring rule: an item counts as added to a turn when at least 60% of its
distinct words of four letters or more appear in what the hook added (case and punctuation
aside), so rewording is allowed but answering with another passage is not."""

from __future__ import annotations

import re
from collections.abc import Mapping

ADDED_FRACTION = 0.6
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> set[str]:
    """Distinct words of four letters or more, lower-cased, punctuation aside."""
    return {w for w in _WORD_RE.findall(text.lower()) if len(w) >= 4}


def is_added(item_text: str, added_words: set[str]) -> bool:
    own = words(item_text)
    return bool(own) and len(own & added_words) >= ADDED_FRACTION * len(own)


def items_added(added: str, catalogue: Mapping[str, str]) -> list[str]:
    """Ids of the catalogue's items that count as added in `added`."""
    if not added:
        return []
    present = words(added)
    return [item_id for item_id, text in catalogue.items() if is_added(text, present)]
