"""The lexical reordering of the nearest candidates (memsift.model.lexical)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from memsift.clock import Deadline
from memsift.longterm.base import Passage
from memsift.longterm.local import LocalStore
from memsift.model.lexical import RERANK_POOL, bm25, rerank

TEXTS = ["Melanie went camping with her kids in the mountains in June.",
         "Caroline went to the LGBTQ support group on the 7th of May.",
         "The group talked about camping plans and the weather."]


def test_bm25_rewards_the_rare_shared_words():
    scores = bm25("When did Caroline go to the support group?", TEXTS)
    assert scores[1] > scores[2] > 0.0
    assert scores[0] == 0.0


def test_bm25_of_a_query_without_content_words_is_zero():
    assert not bm25("what is it?", TEXTS).any()


def test_rerank_lets_a_shared_name_beat_a_slightly_closer_cosine():
    cosines = np.asarray([0.48, 0.45, 0.47], dtype=np.float32)
    assert rerank("When did Caroline go to the support group?", TEXTS, cosines, 1) == [1]
    assert rerank("", TEXTS, cosines, 2) == [0, 2]  # no text: cosine order


def test_rerank_only_reorders_the_nearest_pool_and_skips_the_ineligible():
    texts = ["far away text about caroline"] + ["filler passage"] * (RERANK_POOL + 5)
    cosines = np.concatenate([[-0.9], np.linspace(0.5, 0.4, RERANK_POOL + 5)]).astype(np.float32)
    assert 0 not in rerank("caroline", texts, cosines, 3)  # outside the pool: no rescue
    eligible = np.ones(len(texts), dtype=bool)
    eligible[1] = False
    assert 1 not in rerank("filler", texts, cosines, 5, eligible)


def _fixed_embed(texts):
    """Chosen vectors: the query is closest to TEXTS[0], then TEXTS[2], then TEXTS[1]."""
    table = {TEXTS[0]: [0.48, 1.0], TEXTS[1]: [0.45, 1.0], TEXTS[2]: [0.47, 1.0]}
    rows = []
    for text in texts:
        x, _ = table.get(text, [1.0, 0.0])
        rows.append([x, (1.0 - x * x) ** 0.5])  # unit vectors whose cosine with (1, 0) is x
    return np.asarray(rows, dtype=np.float32)


def test_the_embedded_store_orders_its_results_with_the_query_words(tmp_path):
    store = LocalStore(tmp_path / "lt", _fixed_embed, "fixed")
    store.add([Passage(str(i), text) for i, text in enumerate(TEXTS)])
    query = "When did Caroline go to the support group?"
    vector = np.asarray([1.0, 0.0], dtype=np.float32)
    assert [p.id for p in store.search_vector(vector, 3, Deadline(5.0))] == ["0", "2", "1"]
    by_words = store.search_vector(vector, 3, Deadline(5.0), text=query)
    assert by_words[0].id == "1"
    for passage in by_words:  # the order changes, the similarity stays the cosine
        assert passage.similarity == pytest.approx(float(passage.meta["vector"] @ vector))
    assert [p.id for p in store.search(query, 3, Deadline(5.0))] == [p.id for p in by_words]


def test_bm25_gives_the_same_bits_whatever_the_string_hash_seed():
    """The words a text shares with the query are a set, and their float32 sum depends on the
    order: summed in set order, each process (its own hash seed) got its own last bits, and
    the trainers' inputs with them."""
    code = ("import random, sys\n"
            "from memsift.model.lexical import bm25\n"
            "random.seed(1)\n"
            "words = [f'word{i}x' for i in range(60)]\n"
            "query = ' '.join(random.sample(words, 25))\n"
            "texts = [' '.join(random.choices(words, k=random.randint(5, 40))) for _ in range(200)]\n"
            "sys.stdout.write(bm25(query, texts).tobytes().hex())\n")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                              env=dict(os.environ, PYTHONHASHSEED=str(seed))).stdout
               for seed in range(4)}
    assert len(outputs) == 1
