# The two commands of the README:
#   make demo   set up memsift in .venv and run the sample session on the embedded default
#   make test   set up everything the tests need (venv, the real CLIs, a Cognee server) and run them
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CACHE := .cache

.PHONY: setup demo test test-fast lint clean

$(BIN)/memsift: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
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

lint: setup
	$(BIN)/ruff check memsift tests

test-fast: setup
	$(BIN)/pytest -q -m "not e2e and not cognee"

test: setup clis lint
	$(BIN)/pytest -q

clean:
	rm -rf $(VENV) $(CACHE)
