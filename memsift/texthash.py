"""The key of a text in the vector caches: whitespace-normalised, hashed. Apart from
memsift.model.vectors so that reading the notes (every prompt) needs no numpy."""

from __future__ import annotations

import hashlib


def text_hash(text: str) -> str:
    return hashlib.blake2b(" ".join(text.split()).encode("utf-8"), digest_size=12).hexdigest()
