"""The local judge's trained weights: the ones their provenance records (data, command, hash),
loaded by numpy alone, and deciding known cases the way the corpus taught them."""

import hashlib
import json

import numpy as np
import pytest

from memsift.judge.corpus import corpus_hash
from memsift.judge.local import HEADS_FILE, LocalJudge
from memsift.model.cross import CROSS_FILE, KIND_FILE, kind_ids, load, pair_ids
from memsift.model.wordpiece import default_tokenizer

PROVENANCE = HEADS_FILE.with_suffix(".json")
FLAKE_REPLY = ("The integration run aborted: TestCaptureFlow failed with \"context deadline "
               "exceeded\" while waiting for fakenorvane, before any refund test ran.")
FLAKE = ("Known CI flake: TestCaptureFlow times out when the fakenorvane container is slow to "
         "start; rerunning is the workaround, the real fix (a readiness probe) is KP-412.")
FLAKE_NEAR = "fakenorvane runs on port 9300; start it with make fake-up before the tests."


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_heads_are_the_ones_recorded_and_trained_on_this_corpus():
    record = json.loads(PROVENANCE.read_text())
    assert record["heads_sha256"] == sha256(HEADS_FILE)
    assert record["corpus_sha256"] == corpus_hash()  # retrain (make train) when corpus/ changes
    assert "make train" in record["command"] and record["date"]
    assert set(record["validation"]) >= {"kind_accuracy", "search_accuracy", "found",
                                         "for_nothing", "item_auc_vs_near"}


def test_the_heads_name_the_encoders_they_were_stacked_on():
    """The heads' stack was fitted on these cross- and kind-encoder files' outputs: another
    file beside the same heads would be read with a stack that does not fit it."""
    from memsift.judge import local

    heads = local._heads(HEADS_FILE)
    assert str(heads["cross_sha256"]) == sha256(CROSS_FILE)
    assert str(heads["kind_encoder_sha256"]) == sha256(KIND_FILE)
    # Both encoders are trained on this corpus (retrain them when corpus/sessions changes).
    for path in (CROSS_FILE, KIND_FILE):
        record = json.loads(path.with_suffix(".json").read_text())
        assert record["weights_sha256"] == sha256(path)
        assert record["corpus_sha256"] == corpus_hash()


def test_the_kind_encoder_reads_message_then_reply_then_user_before():
    tok = default_tokenizer()
    ids, types = kind_ids("that again?", "the lint step failed", "run the linter")
    assert ids[0] == tok.cls_id and ids.count(tok.sep_id) == 3 and len(ids) == len(types)
    assert types[: ids.index(tok.sep_id) + 1] == [0] * (ids.index(tok.sep_id) + 1)
    assert types[-1] == 1
    alone, alone_types = kind_ids("that again?", "", "")
    assert alone.count(tok.sep_id) == 1 and set(alone_types) == {0}


def test_the_shipped_kind_encoder_gives_eleven_kinds_and_a_need():
    from memsift.judge.base import KINDS

    out = load(KIND_FILE).kind_logits("that flake again?", FLAKE_REPLY, "now the integration ones")
    assert out.shape == (len(KINDS) + 1,) and np.all(np.isfinite(out))


@pytest.mark.parametrize("message", ["ugh, this one again", "same as last time?"])
def test_a_failure_before_a_terse_message_raises_its_need_for_memory(message):
    judge = LocalJudge()
    alone = judge.needs_memory(message)
    judge.set_turns([("user", "now the integration ones"), ("assistant", FLAKE_REPLY)])
    after = judge.needs_memory(message)
    assert after > alone + 0.1 and judge.needs_memory("thanks") < 0.01


def test_a_pair_reads_message_reply_and_item_in_order():
    ids, types = pair_ids("that again?", "the lint step failed", "run make lint")
    tok = default_tokenizer()
    assert ids[0] == tok.cls_id and ids[-1] == tok.sep_id and ids.count(tok.sep_id) == 3
    first_sep = ids.index(tok.sep_id)
    assert types[: first_sep + 1] == [0] * (first_sep + 1) and types[-1] == 1
    assert len(ids) == len(types)


def test_the_cross_encoder_runs_on_numpy_and_reads_each_item_alone(tmp_path):
    """From MiniLM's own first layers and a random head (what training starts from)."""
    from memsift.training.cross import initial_params, save

    params = initial_params()
    params["head.weight"] = np.random.default_rng(0).normal(size=(384, 1)).astype(np.float32)
    save(params, tmp_path / "cross.npz")
    model = load(tmp_path / "cross.npz")
    a = model.score("that again?", FLAKE_REPLY, [FLAKE, FLAKE_NEAR])
    b = model.score("that again?", FLAKE_REPLY, [FLAKE_NEAR, FLAKE])
    assert a.shape == (2,) and np.all((a > 0) & (a < 1)) and a[0] != a[1]
    np.testing.assert_allclose(a, b[::-1], rtol=1e-4)


def test_a_trainer_started_with_more_layers_saves_and_runs_them(tmp_path):
    """--layers 6: the weights say how many layers they hold and the numpy forward runs them
    all, so the extra layers change the score."""
    from memsift.training.cross import arguments, initial_params, layers_in, save

    assert arguments(["--steps", "5", "--layers", "6"], 100, tmp_path / "x.npz") == (
        5, tmp_path / "x.npz", 6)
    head = np.random.default_rng(0).normal(size=(384, 1)).astype(np.float32)
    scores = {}
    for layers in (3, 6):
        params = initial_params(layers=layers)
        params["head.weight"] = head
        save(params, tmp_path / f"cross{layers}.npz")
        assert layers_in(tmp_path / f"cross{layers}.npz") == layers
        scores[layers] = load(tmp_path / f"cross{layers}.npz").score("that again?", FLAKE_REPLY,
                                                                     [FLAKE])[0]
    assert abs(scores[3] - scores[6]) > 1e-3


def test_a_second_stage_names_the_weights_it_starts_from(tmp_path):
    """--from FILE continues from trained weights: the command says so, and a file without
    its provenance beside it is refused (the chain would not be reproducible)."""
    from memsift.training.cross import command, stage

    assert stage(["--steps", "5"]) == {"sessions_only": False, "start": None, "pairs_repeat": 1,
                                       "group_negatives": 0, "listwise": False}
    assert stage(["--from", str(CROSS_FILE), "--listwise"])["listwise"] is True
    with pytest.raises(SystemExit, match="--from"):
        stage(["--listwise"])  # it continues trained weights: which ones must be named
    assert stage(["--from", str(CROSS_FILE), "--pairs-repeat", "3"])["pairs_repeat"] == 3
    with pytest.raises(SystemExit, match="provenance"):
        stage(["--from", str(tmp_path / "bare.npz")])
    with pytest.raises(SystemExit, match="pairs-repeat"):
        stage(["--pairs-repeat", "0"])
    line = command("memsift.training.cross", 2000, 3, start=CROSS_FILE, pairs_repeat=3)
    assert line.endswith("--from memsift/data/cross_encoder.npz --pairs-repeat 3")
    assert "--sessions-only" in command("memsift.training.cross", 6000, 3, sessions_only=True)
    assert "--listwise --from" in command("memsift.training.cross", 2000, 3, start=CROSS_FILE,
                                          listwise=True)


def test_group_negatives_are_other_groups_answers_mostly_the_same_peoples():
    """Each group is also read against other groups' answers as non-answers: two in three
    from its own project's other groups, never its own items, the same draw every run."""
    from memsift.judge.corpus import stem
    from memsift.training.cross import other_items

    assert stem("chat-arts-priya-mateo-07") == "chat-arts-priya-mateo"
    assert stem("kestrel") == "kestrel"
    groups = [{"project": f"{who}-{n:02d}", "message": f"q {who} {n}",
               "answer": f"a {who} {n}", "near": [f"n {who} {n}"]}
              for who in ("ana-ben", "cy-dee") for n in range(1, 5)]
    picked = other_items(groups, 3)
    assert picked == other_items(groups, 3)
    for group, items in zip(groups, picked, strict=True):
        assert len(items) == 3 and len(set(items)) == 3
        assert not {group["answer"], *group["near"]} & set(items)
        assert all(item.startswith("a ") for item in items)  # other questions' answers
        own = stem(group["project"])
        assert sum(item.split()[1] == own for item in items) == 2


def test_the_shipped_cross_encoder_reads_the_reply_before_the_message():
    """The same terse message and item, with and without the failure it follows."""
    model = load()
    after_failure = model.score("that again?", FLAKE_REPLY, [FLAKE])[0]
    alone = model.score("that again?", "", [FLAKE])[0]
    assert after_failure > alone


def test_the_turn_before_makes_a_terse_message_a_recurring_problem():
    judge = LocalJudge()
    alone = judge.kind("ugh, this one again")["recurring"]
    judge.set_turns([("user", "now the integration ones"), ("assistant", FLAKE_REPLY)])
    assert judge.kind("ugh, this one again")["recurring"] > alone


@pytest.mark.parametrize("message", ["ugh, this one again", "that flake again?"])
def test_the_known_incident_answers_a_terse_message_after_the_failure(message):
    judge = LocalJudge()
    judge.set_turns([("user", "now the integration ones"), ("assistant", FLAKE_REPLY)])
    flake, near = judge.score(message, [FLAKE, FLAKE_NEAR])
    assert flake > near


def test_the_stack_rises_with_both_probabilities_so_a_hopeless_group_can_skip_the_encoder():
    from memsift.judge.local import _heads, _stack

    heads = _heads(HEADS_FILE)
    grid = np.linspace(1e-4, 1 - 1e-4, 30)
    first, second, need = np.meshgrid(grid, grid, grid, indexing="ij")
    stacked = _stack(heads, first, second, need)
    for axis in range(3):
        assert np.all(np.diff(stacked, axis=axis) >= 0)


def test_an_item_behind_its_groups_best_scores_no_higher_than_the_best_would():
    """The stack reads each logit less its group's best: behind the best only lowers the
    score, so the best item at a near-certain cross-encoder still bounds the whole group."""
    from memsift.judge.local import _heads, _stack, reads_relative

    heads = _heads(HEADS_FILE)
    assert reads_relative(heads)
    grid = np.linspace(1e-4, 1 - 1e-4, 12)
    first, second = np.meshgrid(grid, grid, indexing="ij")
    best = _stack(heads, first, second, 0.5)
    for behind in ((-1.0, 0.0), (0.0, -1.0), (-2.0, -3.0)):
        assert np.all(_stack(heads, first, second, 0.5, behind) < best)
