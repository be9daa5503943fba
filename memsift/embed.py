"""The offline embedding model (interface; the numpy MiniLM lands here).

embed(texts) -> float32 array (len(texts), DIM), rows L2-normalised, so a dot product is the
cosine. Vectors carry MODEL_ID wherever they are stored; a change of model re-embeds.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

MODEL_ID = "all-MiniLM-L6-v2"
DIM = 384


def embed(texts: Sequence[str]) -> np.ndarray:
    raise NotImplementedError("the numpy MiniLM is not in yet")
