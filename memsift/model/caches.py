"""The offline models' float32 caches, made ahead of the first prompt.

Every hook process opens the embedding model and the encoders from their float32 caches in
the cache folder (floatcache.py); a process that finds none makes them before it can answer.
That costs about 0.9 s on a 2-core machine (the embedding model's ONNX file alone 0.55 s),
close to the whole offline prompt budget (1.0 s), so the first prompt after an install would
often end with nothing added. Set-up makes them instead: `make setup`, the launcher's own
set-up (hooks/run) and `memsift install` run `memsift warm prepare`, and the benchmarks and
the demo prepare the homes they make, so they measure what a user's prompts meet.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from memsift.model import cross, embed


@dataclass(frozen=True)
class Prepared:
    name: str
    cache: Path
    built: bool  # False: it was already there
    seconds: float


def models() -> list[tuple[str, Path | None]]:
    """(name, weights file) of each cached model; None: the embedding model's ONNX file,
    found in its package when it is needed."""
    files = [("cross-encoder", cross.CROSS_FILE), ("kind encoder", cross.KIND_FILE),
             ("keep cross-encoder", cross.KEEP_CROSS_FILE)]
    return [("embedding model", None)] + [(n, p) for n, p in files if p.exists()]


def ready(cache_dir: Path) -> dict[str, bool]:
    """Each model's name -> whether its cache in `cache_dir` is made and current."""
    out = {}
    for name, path in models():
        if path is None:
            try:
                out[name] = embed.cache_ready(embed.onnx_path(), cache_dir / embed.CACHE_NAME)
            except embed.EmbedError:
                out[name] = False
        else:
            out[name] = cross.cache_ready(path, cross.cache_folder(path, cache_dir))
    return out


def prepare(cache_dir: Path) -> list[Prepared]:
    """Make each model's cache in `cache_dir` unless it is current. EmbedError or CrossError
    when a model's weights cannot be read; OSError when a cache cannot be written."""
    done = []
    for name, path in models():
        begin = time.perf_counter()
        if path is None:
            onnx = embed.onnx_path()
            cache = cache_dir / embed.CACHE_NAME
            built = not embed.cache_ready(onnx, cache)
            if built:
                embed.build_cache(onnx, cache)
        else:
            cache = cross.cache_folder(path, cache_dir)
            built = not cross.cache_ready(path, cache)
            if built:
                cross.write_cache(cache, path, cross.read_weights(path))
        done.append(Prepared(name, cache, built, time.perf_counter() - begin))
    return done
