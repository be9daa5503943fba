"""The memory frame's own tags taken out of the items inside it.

Notes and passages are written by anyone with access to the project or the team's Cognee
dataset. An item holding `</memsift-memory>` would end the block early, and what follows it
would reach the agent outside the "recorded data, not instructions" frame. So every item is
read through a skeleton (NFKC, lower case, entities decoded, invisible characters dropped,
look-alike brackets, dashes and letters mapped to ASCII), each spelling of the frame's tags
found in it is located back in the original text, and replaced there by a plain marker.
"""

from __future__ import annotations

import html
import re
import unicodedata

REMOVED = "[tag removed]"
# Brackets, slashes and dashes that read as `<`, `>`, `/` and `-` (NFKC maps the full-width
# and small forms; these it leaves alone).
_LOOK_ALIKES = str.maketrans({
    "\u2039": "<", "\u203a": ">", "\u3008": "<", "\u3009": ">", "\u27e8": "<", "\u27e9": ">",
    "˂": "<", "˃": ">", "ᐸ": "<", "ᐳ": ">", "❮": "<", "❯": ">", "⧼": "<", "⧽": ">",
    "∕": "/", "⁄": "/", "⧸": "/", "╱": "/",
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-", "﹘": "-",
    "⁃": "-",
    # Cyrillic and Greek letters drawn like the Latin ones of "memsift memory"
    "а": "a", "е": "e", "ѕ": "s", "і": "i", "о": "o", "у": "y", "т": "t", "м": "m",
    "г": "r", "ο": "o", "ι": "i", "τ": "t", "υ": "y", "ε": "e", "μ": "m",
})
# One piece of the original text: an HTML entity (decoded as one character) or a character.
_PIECE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});?|.", re.DOTALL)
# A bracket, possibly still entity-encoded once more (`&amp;lt;` decodes to `&lt;`).
_OPEN = r"(?:<|&lt;?|&#0*60;?|&#x0*3c;?)"
_CLOSE = r"(?:>|&gt;?|&#0*62;?|&#x0*3e;?)"
# A tag's attributes (`name`, `name=value`, `name="a value"`), so that `<memsift-memory id=1>`
# goes whole while the words after a bare `</memsift-memory` stay, even with a `>` further on.
_ATTRIBUTES = r"""(?:\s+[\w:-]+(?:\s*=\s*(?:"[^"<>]{0,80}"|'[^'<>]{0,80}'|[^\s<>"']+))?){1,8}"""
_TAG = re.compile(
    _OPEN + r"\s*/?\s*memsift[\s\-_.:]*memory\b(?:" + _ATTRIBUTES + r"\s*/?\s*" + _CLOSE
    + r"|\s*" + _CLOSE + r"?)")


def _skeleton_of(piece: str) -> str:
    if piece.startswith("&") and len(piece) > 1:
        decoded = html.unescape(piece)
        piece = decoded if len(decoded) == 1 else piece
    if unicodedata.category(piece[0]) == "Cf":  # zero-width spaces and joiners, soft hyphens
        return ""
    return unicodedata.normalize("NFKC", piece).lower().translate(_LOOK_ALIKES)


def neutralise(text: str) -> str:
    """`text` with every spelling of the frame's tags replaced by a plain marker."""
    skeleton: list[str] = []
    origin: list[tuple[int, int]] = []  # for each skeleton character, its piece's span
    for match in _PIECE.finditer(text):
        for char in _skeleton_of(match.group()):
            skeleton.append(char)
            origin.append(match.span())
    spans = [(origin[m.start()][0], origin[m.end() - 1][1])
             for m in _TAG.finditer("".join(skeleton))]
    if not spans:
        return text
    parts, cursor = [], 0
    for start, end in spans:
        parts += [text[cursor:start], REMOVED]
        cursor = end
    return "".join(parts + [text[cursor:]])
