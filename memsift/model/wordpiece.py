"""BERT's uncased WordPiece tokenizer in pure Python (what all-MiniLM-L6-v2 was trained with).

Same steps as the reference BertNormalizer + BertPreTokenizer + WordPiece: drop control
characters, space out CJK ideographs, lower case, strip accents, split on whitespace and
punctuation, then greedy longest-match word pieces with the "##" continuation prefix.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from memsift.paths import PACKAGE_DATA

VOCAB_FILE = PACKAGE_DATA / "vocab.txt"
MAX_WORD_CHARS = 100  # longer "words" become [UNK], as in the reference tokenizer
CLS, SEP, UNK, PAD = "[CLS]", "[SEP]", "[UNK]", "[PAD]"


class WordPiece:
    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab
        self.cls_id, self.sep_id = vocab[CLS], vocab[SEP]
        self.unk_id, self.pad_id = vocab[UNK], vocab[PAD]
        self._word_cache: dict[str, list[int]] = {}

    @classmethod
    def from_file(cls, path: Path = VOCAB_FILE) -> WordPiece:
        lines = path.read_text(encoding="utf-8").split("\n")
        return cls({token: i for i, token in enumerate(lines) if token})

    def encode(self, text: str, max_tokens: int) -> list[int]:
        """Token ids with [CLS] and [SEP], truncated to max_tokens in all."""
        ids = [self.cls_id]
        limit = max_tokens - 1
        for word in basic_tokens(text):
            ids.extend(self._word_ids(word))
            if len(ids) >= limit:
                del ids[limit:]
                break
        ids.append(self.sep_id)
        return ids

    def encode_batch(self, texts: Sequence[str], max_tokens: int) -> list[list[int]]:
        return [self.encode(text, max_tokens) for text in texts]

    def _word_ids(self, word: str) -> list[int]:
        cached = self._word_cache.get(word)
        if cached is None:
            cached = self._word_cache[word] = self._pieces(word)
        return cached

    def _pieces(self, word: str) -> list[int]:
        if len(word) > MAX_WORD_CHARS:
            return [self.unk_id]
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:  # one unmatchable piece makes the whole word unknown
                return [self.unk_id]
            pieces.append(found)
            start = end
        return pieces


@lru_cache(maxsize=1)
def default_tokenizer() -> WordPiece:
    return WordPiece.from_file()


def basic_tokens(text: str) -> list[str]:
    """Normalised words and punctuation marks, before word pieces."""
    words: list[str] = []
    for chunk in _clean(text).lower().split():
        words.extend(_split_punctuation(_strip_accents(chunk)))
    return words


def _clean(text: str) -> str:
    out = []
    for char in text:
        code = ord(char)
        if code == 0 or code == 0xFFFD or _is_control(char):
            continue
        if _is_whitespace(char):
            out.append(" ")
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    return "".join(out)


def _strip_accents(word: str) -> str:
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")


def _split_punctuation(word: str) -> list[str]:
    if word.isalnum():
        return [word]
    parts: list[str] = []
    current: list[str] = []
    for char in word:
        if _is_punctuation(char):
            if current:
                parts.append("".join(current))
                current = []
            parts.append(char)
        else:
            current.append(char)
    if current:
        parts.append("".join(current))
    return parts


def _is_whitespace(char: str) -> bool:
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # BERT counts every non-alphanumeric ASCII symbol as punctuation ($, ^, `, ...).
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )
