"""The session-end keep decision: the shipped weights are the recorded ones, they decide known
exchanges, training reproduces them from a corpus, and the benchmark prints its numbers."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from memsift.judge import keep
from memsift.judge.corpus import CORPUS
from memsift.judge.train_keep import corpus_sha256, train
from memsift.session_end.exchange import Exchange, session_view
from memsift.session_end.held import LONGTERM, NOTES, HeldItem, ProjectMemory, words_of
from memsift.session_end.keepers import OfflineKeeper

HERE = Path(__file__).parent
TINY_CORPUS = HERE / "data" / "keep_corpus"


def test_the_shipped_weights_are_the_ones_their_provenance_records():
    provenance = keep.recorded_provenance()
    shipped = hashlib.sha256(keep.weights_path().read_bytes()).hexdigest()
    assert provenance["weights_sha256"] == shipped
    assert provenance["command"] == "python -m memsift.judge.train_keep"
    assert len(provenance["corpus_sha256"]) == 64 and provenance["trained"]
    if CORPUS.is_dir():  # retrain (make train-keep) when the corpus or its keep labels change
        assert provenance["corpus_sha256"] == corpus_sha256(CORPUS, rule=True)
    assert provenance["train_exchanges"] >= 2000 and provenance["train_projects"] >= 50
    assert {"val_precision", "val_recall", "keep_threshold"} <= set(provenance)
    head = keep.load_head()
    assert head.keep.shape == (keep.n_features(),)
    assert head.keep_threshold == provenance["keep_threshold"]


def test_the_shipped_keep_cross_encoder_is_the_one_recorded_and_the_head_is_stacked_on_it():
    from memsift.model.cross import KEEP_CROSS_FILE

    shipped = hashlib.sha256(KEEP_CROSS_FILE.read_bytes()).hexdigest()
    record = json.loads(KEEP_CROSS_FILE.with_suffix(".json").read_text())
    assert record["weights_sha256"] == shipped
    assert record["command"].startswith("python -m memsift.training.keep_cross")
    if CORPUS.is_dir():  # retrain (make train-keep-cross, then train-keep) when it changes
        assert record["keep_corpus_sha256"] == corpus_sha256(CORPUS, rule=True)
    provenance = keep.recorded_provenance()
    assert provenance["stacked_with_cross_encoder"]
    assert provenance["keep_cross_sha256"] == shipped
    assert keep.load_head().stack is not None


def test_the_keep_cross_encoder_reads_a_cause_and_fix_above_a_one_off_action():
    cause, action, reaction = keep.cross_probability([
        keep.SessionExchange("the nightly export failed again with 403 on upload",
                             "Cause: the job cached its vault token at deploy and tokens live "
                             "24 h. Fixed: the job fetches a fresh token before each upload, so "
                             "a long-running deploy no longer breaks it."),
        keep.SessionExchange("merge it and deploy", "Merged #41 and deployed; health is green."),
        keep.SessionExchange("great, thanks!", "You're welcome.")])
    assert cause > 0.5 > max(action, reaction)


def _probabilities(*pairs: tuple[str, str]) -> tuple[list[float], float]:
    """Each exchange's probability in a project that holds nothing yet, and the bar."""
    exchanges = [Exchange(i, i, u, a) for i, (u, a) in enumerate(pairs)]
    keeper = OfflineKeeper()
    keeper.begin(session_view(exchanges))
    return [keeper.probability(e) for e in exchanges], keeper.threshold


def test_a_reaction_and_a_one_off_action_are_dropped_and_a_fix_with_its_cause_is_kept():
    (fix, reaction, action), threshold = _probabilities(
        ("the worker crashes with RecursionError on the category tree",
         ("The category import created a cycle. The fix was an iterative walk that tracks "
         "visited ids, so a cycle can no longer crash it.")),
        ("thanks!", "You're welcome."),
        ("make the submit button blue", "Changed the button colour to the primary blue."))
    assert fix >= threshold
    assert reaction < threshold and action < threshold


def test_an_exchange_that_repeats_a_held_note_is_named_as_repeating_it():
    from memsift.model.embed import embed

    texts = [("Checkout is the hosted Stripe Checkout page, not Elements: SCA and Apple Pay come "
             "for free with two developers."),
             "Nightly backups go to the eu-west bucket, kept 30 days."]
    memory = ProjectMemory([HeldItem("n01", texts[0], NOTES), HeldItem("m01", texts[1], LONGTERM)],
                           embed(texts))
    user, reply = ("why Checkout and not Elements again?",
                   ("We picked the hosted Stripe Checkout page: SCA and Apple Pay for free, "
                   "which matters with two developers."))
    vectors = embed([user, reply])
    item = memory.restated(keep.load_head(), vectors[0], vectors[1], words_of(user, reply))
    assert item is not None and item.key == "n01"
    other = embed(["which font do the invoices use?", "Inter, 11pt."])
    assert memory.restated(keep.load_head(), other[0], other[1],
                           words_of("which font do the invoices use?", "Inter, 11pt.")) is None


def test_an_exchange_scored_after_the_pass_is_read_with_what_the_project_held():
    from memsift.model.embed import embed

    texts = [("Checkout is the hosted Stripe Checkout page, not Elements: SCA and Apple Pay "
              "come for free with two developers.")]
    memory = ProjectMemory([HeldItem("n01", texts[0], NOTES)], embed(texts))
    first = Exchange(0, 0, "run the tests", "All 88 pass.")
    later = Exchange(1, 1, "why Checkout and not Elements again?",
                     "We picked the hosted Stripe Checkout page: SCA and Apple Pay for free, "
                     "which matters with two developers.", (("run the tests", "All 88 pass."),))
    keeper = OfflineKeeper()
    keeper.begin(session_view([first, later], memory), [first])  # `later` not scored
    reference = OfflineKeeper()
    reference.begin(session_view([first, later], memory), [later])
    assert keeper.probability(later) == pytest.approx(reference.probability(later))
    alone = OfflineKeeper()  # no pass before it: nothing held
    assert alone.probability(later) != pytest.approx(reference.probability(later))


def test_training_on_a_corpus_writes_weights_and_their_provenance(tmp_path):
    corpus = tmp_path / "sessions"
    shutil.copytree(TINY_CORPUS, corpus)
    out = tmp_path / "keep_head.npz"
    report = train(corpus, out, extra=False, cache=tmp_path / "vectors.npz",
                   kinds_cache=tmp_path / "kinds.npz", rule=False)
    provenance = json.loads(out.with_suffix(".json").read_text())
    assert provenance["weights_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert provenance["corpus_sha256"] == corpus_sha256(corpus, rule=False)
    assert report["train_exchanges"] == 12 and report["val_exchanges"] == 6
    with np.load(out) as data:
        assert data["keep"].shape == (keep.n_features(),)
    again = tmp_path / "again.npz"
    train(corpus, again, extra=False, cache=tmp_path / "vectors.npz",
          kinds_cache=tmp_path / "kinds.npz", rule=False)
    with np.load(out) as first, np.load(again) as second:
        assert np.array_equal(first["keep"], second["keep"])  # one command, same weights


def test_benchmark_prints_the_corpus_numbers_as_json(capsys):
    from memsift.bench.keep import main

    if not (HERE.parent / "corpus" / "sessions").is_dir():
        pytest.skip("the labelled corpus is not in this checkout")
    main(as_json=True)
    printed = json.loads(capsys.readouterr().out)["keep"]
    assert {"precision", "recall", "notes_per_80_turns", "notes_restating_held",
            "fact_word_precision"} <= set(printed["corpus_val"])
    assert printed["corpus_val"]["exchanges"] >= 500


def test_the_hand_written_exchanges_are_decided_as_labelled():
    from memsift.bench.keep import measure_hand

    result = measure_hand()
    assert result["exchanges"] == 72
    assert result["precision"] >= 0.85 and result["recall"] >= 0.8


def _stacked_head(tmp_path):
    """A head with a stack, and a keep cross-encoder from MiniLM's first layers with a random
    head (what training starts from)."""
    from memsift.training.cross import initial_params, save

    params = initial_params()
    params["head.weight"] = np.random.default_rng(1).normal(size=(384, 1)).astype(np.float32)
    save(params, tmp_path / "keep_cross.npz")
    shipped = keep.load_head()
    head = keep.Head(shipped.keep, shipped.restate, 0.61, shipped.restate_threshold,
                     np.asarray([0.5, 1.5, -0.2], np.float32), 0.77)
    pairs = [keep.SessionExchange("why did the export fail?",
                                  "Root cause: the S3 token expired; rotate it in vault first."),
             keep.SessionExchange("thanks", "You're welcome.")]
    rows = np.concatenate([keep.session_rows([p], keep.Held(), _embed, head.restate)
                           for p in pairs])
    return head, pairs, rows, tmp_path / "keep_cross.npz"


def _embed(texts):
    from memsift.model.embed import embed

    return embed(list(texts))


def test_the_stack_reads_the_head_and_the_keep_cross_encoder_together(tmp_path):
    from memsift.model.cross import load

    head, pairs, rows, cross_file = _stacked_head(tmp_path)
    probabilities, threshold = head.decide(rows, pairs, cross_file)
    cross = load(cross_file).score_exchanges([(p.user, p.reply) for p in pairs])
    expected = keep.stacked(head.stack, head.keep_probability(rows), cross)
    np.testing.assert_allclose(probabilities, expected, rtol=1e-5)
    assert threshold == 0.61
    assert not np.allclose(probabilities, head.keep_probability(rows))


def test_without_its_cross_encoder_the_stack_falls_back_to_the_head_and_its_own_threshold(
        tmp_path):
    head, pairs, rows, _ = _stacked_head(tmp_path)
    probabilities, threshold = head.decide(rows, pairs, tmp_path / "missing.npz")
    np.testing.assert_allclose(probabilities, head.keep_probability(rows))
    assert threshold == 0.77


def test_in_a_project_that_holds_nothing_the_head_decides_alone(tmp_path):
    head, pairs, rows, cross_file = _stacked_head(tmp_path)
    probabilities, threshold = head.decide(rows, pairs, cross_file, holds_nothing=True)
    np.testing.assert_allclose(probabilities, head.keep_probability(rows))
    assert threshold == 0.77
    stacked, _ = head.decide(rows, pairs, cross_file)
    assert not np.allclose(stacked, probabilities)


def test_a_stacked_head_is_saved_and_loaded_whole(tmp_path):
    head, *_ = _stacked_head(tmp_path)
    keep.save(head, tmp_path / "head.npz")
    keep.load_head.cache_clear()
    try:
        loaded = keep.load_head(tmp_path / "head.npz")
    finally:
        keep.load_head.cache_clear()
    np.testing.assert_allclose(loaded.stack, head.stack)
    assert (loaded.keep_threshold, loaded.head_threshold) == (0.61, 0.77)


def test_training_on_the_rules_labels_reads_the_labels_file_and_the_keep_only_sessions(tmp_path):
    corpus = tmp_path / "sessions"
    shutil.copytree(TINY_CORPUS, corpus)
    extra = tmp_path / "keep-sessions" / "cli"
    extra.mkdir(parents=True)
    session = json.loads((corpus / "web" / "orchard-api.json").read_text())
    session["name"] = session["project"] = "orchard-api-later"
    (extra / "orchard-api-later.json").write_text(json.dumps(session))
    (tmp_path / "keep-labels.jsonl").write_text(json.dumps(
        {"session": "web/quarry-etl", "turns": 6, "kept": {"1": "a fact the rule keeps"}}) + "\n")
    out = tmp_path / "keep_head.npz"
    writers = train(corpus, out, extra=False, cache=tmp_path / "vectors.npz",
                    kinds_cache=tmp_path / "kinds.npz", rule=False)
    assert writers["train_exchanges"] == 12
    assert json.loads(out.with_suffix(".json").read_text())["command"] \
        == "python -m memsift.judge.train_keep --labels writers"
    rule = train(corpus, out, extra=False, cache=tmp_path / "vectors.npz",
                 kinds_cache=tmp_path / "kinds.npz")  # the rule's labels: the default
    provenance = json.loads(out.with_suffix(".json").read_text())
    assert rule["train_exchanges"] == 18  # the keep-only copy of orchard-api too
    assert rule["train_keep"] == 5  # orchard-api 2, its copy 2, quarry-etl 1 by the rule (2 before)
    assert provenance["command"] == "python -m memsift.judge.train_keep"
    assert provenance["corpus_sha256"] == corpus_sha256(corpus, rule=True) \
        != corpus_sha256(corpus)
    assert provenance["keep_labels"].endswith("keep-labels.jsonl")


def test_a_pass_over_the_last_exchanges_runs_the_kind_encoder_on_those_alone():
    pairs = [("should the importer keep SQLite?", "Move to Postgres: four writers lock SQLite."),
             ("ok do it", "Done: app/db.py uses Postgres now."),
             ("thanks", "You're welcome.")]
    exchanges = keep.in_order(pairs)
    head = keep.load_head()
    read = []

    def kinds(reads):
        read.extend(reads)
        return keep.encoder_kinds(reads)

    whole = keep.session_rows(exchanges, keep.Held(), _embed, head.restate)
    last = keep.session_rows(exchanges, keep.Held(), _embed, head.restate, kinds, wanted=[1])
    assert read == [("ok do it", pairs[0][1], pairs[0][0])]  # the message with the turn before
    np.testing.assert_allclose(last[1], whole[1], rtol=1e-5, atol=1e-6)


def test_session_end_replay_names_the_files_that_are_not_conversations(tmp_path):
    from click.testing import CliRunner

    from memsift.cli import cli

    retrieval = tmp_path / "locomo.json"
    retrieval.write_text(json.dumps({"name": "r", "memory": [], "queries": []}))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    result = CliRunner().invoke(cli, ["bench", "--session-end", str(retrieval), str(broken)])
    assert result.exit_code == 2
    assert "not: " in result.output and str(retrieval) in result.output
    assert str(broken) in result.output and "Traceback" not in result.output
