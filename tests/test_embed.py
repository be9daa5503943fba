"""The numpy MiniLM: tokenizer, vectors, and the weight cache built from the ONNX file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from memsift.model import embed as embed_module
from memsift.model import floatcache
from memsift.model.embed import DIM, MODEL_ID, embed, load_model, onnx_path
from memsift.model.onnxread import OnnxFormatError, read_graph
from memsift.model.wordpiece import basic_tokens, default_tokenizer

CASES = json.loads((Path(__file__).parent / "data" / "wordpiece_cases.json").read_text("utf-8"))


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: c["text"][:30] or "empty")
def test_wordpiece_matches_the_reference_tokenizer(case):
    assert default_tokenizer().encode(case["text"], 256) == case["ids"]


def test_basic_tokens_lowercase_strip_accents_and_split_punctuation():
    assert basic_tokens("Déjà-Vu, OK?") == ["deja", "-", "vu", ",", "ok", "?"]


def test_embed_rows_are_unit_float32_of_the_model_dimension():
    vectors = embed(["hello", "run the tests again", ""])
    assert vectors.shape == (3, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_embed_of_nothing_is_an_empty_matrix():
    assert embed([]).shape == (0, DIM)


def test_a_paraphrase_is_closer_than_unrelated_text():
    query, para, other = embed([
        "Where are my spectacles?",
        "My reading glasses are on the bedside table.",
        "The deploy pipeline pushes Docker images to the registry.",
    ])
    assert query @ para > query @ other + 0.2


def test_batched_and_single_embeddings_agree():
    texts = ["short", "a much longer sentence that needs padding in a batch of several"]
    batched = embed(texts)
    single = np.vstack([embed([t]) for t in texts])
    assert np.abs(batched - single).max() < 1e-5


def test_alone_gives_each_text_the_vector_it_gets_by_itself():
    # Padded beside a longer text, a vector moves by about 1e-7; a trainer fed such vectors
    # fitted different heads from one run to the next, as its cache held different texts.
    texts = ["short", "a much longer sentence that needs padding in a batch of several",
             "four words long here", "short"]
    single = np.vstack([embed([t]) for t in texts])
    assert np.array_equal(embed(texts, alone=True), single)


def test_the_trainers_vectors_do_not_depend_on_what_the_cache_held(tmp_path):
    from memsift.judge.corpus import Vectors

    texts = ["run the tests", "why is the ingest service in Go when everything else is Python?",
             "the staging model is stg_subscription_events", "run the tests again"]
    together = Vectors(tmp_path / "together.npz")
    together.fill(texts)
    piecemeal = Vectors(tmp_path / "piecemeal.npz")
    for text in reversed(texts):
        piecemeal.fill([text])
    reread = Vectors(tmp_path / "piecemeal.npz")
    assert np.array_equal(together(texts), piecemeal(texts))
    assert np.array_equal(together(texts), reread(texts))


def test_cache_is_rebuilt_when_the_model_id_changes(tmp_path):
    cache = tmp_path / "minilm"
    first = load_model(onnx_path(), cache)
    meta = json.loads((cache / "meta.json").read_text())
    assert meta["model_id"] == MODEL_ID and len(meta["onnx_sha256"]) == 64
    load_model(onnx_path(), cache, model_id="another-model")
    assert json.loads((cache / "meta.json").read_text())["model_id"] == "another-model"
    again = load_model(onnx_path(), cache)
    ids = [default_tokenizer().encode("cache check", 256)]
    assert np.allclose(first.encode(ids), again.encode(ids), atol=1e-6)


def test_cache_is_rebuilt_when_the_onnx_file_changes(tmp_path):
    onnx = tmp_path / "model.onnx"
    shutil.copyfile(onnx_path(), onnx)
    cache = tmp_path / "minilm"
    load_model(onnx, cache)
    meta_path = cache / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta.update(onnx_sha256="0" * 64, onnx_size=1)  # as if an older file had been converted
    meta_path.write_text(json.dumps(meta))
    load_model(onnx, cache)
    rebuilt = json.loads(meta_path.read_text())
    assert rebuilt["onnx_sha256"] == floatcache.file_sha256(onnx)


def test_an_unfinished_cache_without_meta_is_rebuilt(tmp_path):
    cache = tmp_path / "minilm"
    load_model(onnx_path(), cache)
    (cache / "meta.json").unlink()
    (cache / "weights.npy").write_bytes(b"garbage")
    model = load_model(onnx_path(), cache)
    assert model.encode([default_tokenizer().encode("x", 256)]).shape == (1, DIM)


def test_a_file_that_is_not_onnx_is_refused():
    with pytest.raises(OnnxFormatError):
        read_graph(b"\x0f\xff\xff")


def test_a_cache_folder_that_cannot_be_written_is_an_embed_error(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    with pytest.raises(embed_module.EmbedError):
        load_model(onnx_path(), blocker / "minilm")
