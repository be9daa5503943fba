"""The cross-encoder's float32 cache: built once from the shipped file, mmapped after, rebuilt
when the file's bytes change, and never an error when it cannot be written."""

from __future__ import annotations

import os

import numpy as np

from memsift.model.cross import cached_weights, read_weights


def _write(path, value: float) -> None:
    rng = np.random.default_rng(int(value))
    with open(path, "wb") as handle:
        np.savez(handle, layers=np.asarray(1), **{
            "head.weight": np.full((4, 1), value, np.float16),
            "encoder.layer.0.output.dense.weight": rng.normal(size=(4, 4)).astype(np.float16)})


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_the_cache_is_built_once_and_mapped_after(tmp_path):
    source, cache = tmp_path / "cross.npz", tmp_path / "cache"
    _write(source, 1.0)
    first = cached_weights(source, cache)
    assert (cache / "weights.npy").exists() and (cache / "meta.json").exists()
    again = cached_weights(source, cache)
    assert not again["head.weight"].flags.owndata  # a view of the mapped file, not a copy
    assert again["head.weight"].dtype == np.float32
    assert _same(first, again) and _same(again, {k: v.astype(np.float32) if v.ndim else v
                                                  for k, v in read_weights(source).items()})
    assert int(again["layers"]) == 1


def test_new_bytes_in_the_shipped_file_rebuild_the_cache(tmp_path):
    source, cache = tmp_path / "cross.npz", tmp_path / "cache"
    _write(source, 1.0)
    cached_weights(source, cache)
    stat = source.stat()
    _write(source, 2.0)  # same size: only the bytes say it changed
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert float(cached_weights(source, cache)["head.weight"][0, 0]) == 2.0


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path):
    source, cache = tmp_path / "cross.npz", tmp_path / "cache"
    _write(source, 3.0)
    cache.write_text("a file where the folder should be")
    assert float(cached_weights(source, cache)["head.weight"][0, 0]) == 3.0
