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
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from memsift.model import cross, embed


class CachesError(Exception):
    """A model's weights cannot be read, or its cache cannot be written."""


@dataclass(frozen=True)
class Prepared:
    name: str
    cache: Path
    built: bool  # False: it was already there
    seconds: float


@dataclass(frozen=True)
class _Model:
    name: str
    cache: Path
    ready: Callable[[], bool]  # the cache is made and current
    make: Callable[[], object]


def models() -> list[tuple[str, Path | None]]:
    """(name, weights file) of each cached model; None: the embedding model's ONNX file,
    found in its package when it is needed."""
    files = [("cross-encoder", cross.CROSS_FILE), ("kind encoder", cross.KIND_FILE),
             ("keep cross-encoder", cross.KEEP_CROSS_FILE)]
    return [("embedding model", None)] + [(n, p) for n, p in files if p.exists()]


def _models(cache_dir: Path) -> list[_Model]:
    out = []
    for name, path in models():
        if path is None:
            cache = cache_dir / embed.CACHE_NAME
            out.append(_Model(name, cache, partial(_embed_ready, cache),
                              partial(_make_embed, cache)))
        else:
            cache = cross.cache_folder(path, cache_dir)
            out.append(_Model(name, cache, partial(cross.cache_ready, path, cache),
                              partial(_make_cross, cache, path)))
    return out


def _embed_ready(cache: Path) -> bool:
    try:
        return embed.cache_ready(embed.onnx_path(), cache)
    except embed.EmbedError:  # its package is missing
        return False


def _make_embed(cache: Path) -> None:
    embed.build_cache(embed.onnx_path(), cache)


def _make_cross(cache: Path, path: Path) -> None:
    cross.write_cache(cache, path, cross.read_weights(path))


def ready(cache_dir: Path) -> dict[str, bool]:
    """Each model's name -> whether its cache in `cache_dir` is made and current."""
    return {model.name: model.ready() for model in _models(cache_dir)}


def prepare(cache_dir: Path) -> list[Prepared]:
    """Make each model's cache in `cache_dir` unless it is current. CachesError when a
    model's weights cannot be read or a cache cannot be written."""
    done = []
    try:
        for model in _models(cache_dir):
            begin = time.perf_counter()
            built = not model.ready()
            if built:
                model.make()
            done.append(Prepared(model.name, model.cache, built, time.perf_counter() - begin))
    except (embed.EmbedError, cross.CrossError, OSError) as exc:
        raise CachesError(str(exc)) from exc
    return done
