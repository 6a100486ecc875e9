# Quantfish: `make install` prepares everything, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
QF := $(VENV)/bin/quantfish

.PHONY: install venv package net warm test bench clean

install: package net warm

venv: $(PY)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

package: $(PY)
	$(PY) -m pip install -q -e '.[test]'

net: $(PY)
	$(PY) -m nnue.get_net

# Compile every Numba function once so that the first game starts at once.
warm: package
	$(PY) -m engine.warm

test: $(PY)
	$(PY) -m pytest -q

bench: $(PY)
	$(PY) -m engine.bench_all

clean:
	rm -rf $(VENV) build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
