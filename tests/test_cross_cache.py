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


def test_int8_layers_read_back_within_half_a_step_of_their_column(tmp_path):
    """quantize: the layers' matrices as int8 columns with a scale each (a quarter of their
    float32 bytes), the rest as float16; read_weights expands them, and the cache holds floats."""
    from memsift.model.cross import quantize

    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(64, 32)).astype(np.float32) * np.linspace(0.01, 2.0, 32)
    weights = {"encoder.layer.0.output.dense.weight": matrix,
               "head.weight": rng.normal(size=(64, 1)).astype(np.float32)}
    stored = quantize(weights)
    assert stored["encoder.layer.0.output.dense.weight.int8"].dtype == np.int8
    assert stored["head.weight"].dtype == np.float16
    source = tmp_path / "cross.npz"
    with open(source, "wb") as handle:
        np.savez(handle, layers=np.asarray(1), **stored)
    back = read_weights(source)
    assert set(back) == {"layers", *weights}
    step = np.abs(matrix).max(axis=0) / 127.0
    error = np.abs(back["encoder.layer.0.output.dense.weight"] - matrix)
    assert np.all(error <= step * 0.5 + 1e-3 * step + 1e-6)
    assert error.max() > 0  # quantized, not stored as it was
    cached = cached_weights(source, tmp_path / "cache")
    np.testing.assert_allclose(cached["encoder.layer.0.output.dense.weight"],
                               back["encoder.layer.0.output.dense.weight"])


def test_an_int8_matrix_without_its_scales_is_a_damaged_file(tmp_path):
    import pytest

    from memsift.model.cross import CrossError, quantize

    stored = quantize({"encoder.layer.0.output.dense.weight": np.ones((4, 4), np.float32)})
    del stored["encoder.layer.0.output.dense.weight.scale"]
    source = tmp_path / "cross.npz"
    with open(source, "wb") as handle:
        np.savez(handle, layers=np.asarray(1), **stored)
    with pytest.raises(CrossError, match="damaged"):
        read_weights(source)
