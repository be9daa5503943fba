"""Training the local judge on the labelled corpus (corpus/, read by judge/corpus.py): the
cross-encoder (cross.py) and the heads stacked on it (judge.py). Run with JAX in a training
venv (`make train-cross`, `make train`); never imported by the hook. Above the prompt path in
the layers: the thresholds are chosen under the cascade's own policy."""
