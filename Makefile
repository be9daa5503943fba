# The two commands of the README:
#   make demo   set up memsift in .venv and run the sample session on the embedded default
#   make test   set up everything the tests need (venv, the real CLIs, a Cognee server) and run them
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CACHE := .cache

.PHONY: setup demo test test-fast lint clean clis cognee-venv tmux train train-cross

$(BIN)/memsift: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/memsift warm prepare
	touch $(BIN)/memsift

setup: $(BIN)/memsift

demo: setup
	$(BIN)/memsift demo

# The real host CLIs for the end-to-end tests (claude, codex, and node 22 with the skills CLI),
# pinned in tests/e2e/package.json and locked in its package-lock.json: `npm ci` installs
# exactly the locked versions.
$(CACHE)/npm/node_modules/.bin/claude: tests/e2e/package.json tests/e2e/package-lock.json
	mkdir -p $(CACHE)/npm
	cp tests/e2e/package.json tests/e2e/package-lock.json $(CACHE)/npm/
	cd $(CACHE)/npm && npm ci --no-audit --no-fund --loglevel=error
	touch $@

clis: $(CACHE)/npm/node_modules/.bin/claude

# Cognee for the integration tests, in its own venv (about 1.6 GB) so memsift's install stays
# light; the tests find it through MEMSIFT_COGNEE_PYTHON. COGNEE_VENV=... puts it elsewhere.
COGNEE_VENV ?= $(CACHE)/cognee-venv
COGNEE_VERSION := 1.6.5
$(COGNEE_VENV)/.installed-$(COGNEE_VERSION):
	$(PYTHON) -m venv $(COGNEE_VENV)
	$(COGNEE_VENV)/bin/python -m pip install --quiet cognee==$(COGNEE_VERSION)
	touch $@

cognee-venv: $(COGNEE_VENV)/.installed-$(COGNEE_VERSION)

# tmux draws `memsift status` in a real terminal for tests/test_status_terminal.py.
tmux:
	@command -v tmux >/dev/null || apt-get install -y -qq tmux >/dev/null \
	  || (apt-get update -qq && apt-get install -y -qq tmux >/dev/null) \
	  || echo "tmux could not be installed: the terminal test will be skipped"

# Training the local judge on corpus/ (docs/decision-model.md): JAX on the CPU, in its own venv
# so memsift's install stays numpy-only. Not part of `make test`; about three hours in all on
# a quiet 2-core machine. train-cross writes memsift/data/cross_encoder.npz from the sessions'
# pairs (~2 hours), train-kinds memsift/data/kind_encoder.npz, then train the heads stacked on
# both (memsift/data/judge_local.npz, ~20 minutes); each writes its provenance beside it.
# train-cross-groups continues the cross-encoder on corpus/cross-pairs' groups (~25 minutes; its
# record chains both stages): measured, not shipped (docs/decision-model.md says why).
TRAIN_VENV := $(CACHE)/train-venv
CROSS_STAGE_STEPS := 2000
CROSS_PAIRS_REPEAT := 4
CROSS_GROUP_NEGATIVES := 3
$(TRAIN_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/pip install --quiet jax==0.10.2 jaxlib==0.10.2 optax==0.2.8
	$(TRAIN_VENV)/bin/pip install --quiet -e .
	touch $@

train-cross: $(TRAIN_VENV)/.installed
	$(TRAIN_VENV)/bin/python -m memsift.training.cross --sessions-only

.PHONY: train-cross-groups
train-cross-groups: $(TRAIN_VENV)/.installed
	$(TRAIN_VENV)/bin/python -m memsift.training.cross --from memsift/data/cross_encoder.npz \
	  --steps $(CROSS_STAGE_STEPS) --pairs-repeat $(CROSS_PAIRS_REPEAT) \
	  --group-negatives $(CROSS_GROUP_NEGATIVES)

# The kind encoder (memsift/data/kind_encoder.npz, all six layers, ~45 minutes): the message's
# kind and its need for memory, read with the turn before; train it before `make train`, which
# stacks on it.
.PHONY: train-kinds
train-kinds: $(TRAIN_VENV)/.installed
	$(TRAIN_VENV)/bin/python -m memsift.training.kind_encoder

train: $(TRAIN_VENV)/.installed
	$(TRAIN_VENV)/bin/python -m memsift.training.judge

# The session-end keep decision (docs/session-end.md), in this order: train-keep-cross
# fine-tunes the keep cross-encoder with JAX (memsift/data/keep_cross.npz, ~30 minutes on two
# cores), then train-keep fits the keep head with numpy alone and stacks it on that
# cross-encoder (memsift/data/keep_head.npz and keep_head.json; ~15 minutes, most of them
# embedding the corpus once, cached under .cache/). Not part of `make test`.
.PHONY: train-keep-cross
train-keep-cross: $(TRAIN_VENV)/.installed
	$(TRAIN_VENV)/bin/python -m memsift.training.keep_cross

.PHONY: train-keep
train-keep: setup
	$(BIN)/python -m memsift.judge.train_keep

lint: setup
	$(BIN)/ruff check memsift tests

test-fast: setup
	$(BIN)/pytest -q -m "not e2e and not cognee"

test: setup clis lint cognee-venv tmux
	MEMSIFT_COGNEE_PYTHON=$(abspath $(COGNEE_VENV))/bin/python $(BIN)/pytest -q

clean:
	rm -rf $(VENV) $(CACHE)
