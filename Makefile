# Quantfish: `make install` prepares everything, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
QF := $(VENV)/bin/quantfish

.PHONY: install venv package kernel net warm test bench clean train-deps

install: package kernel net warm

venv: $(PY)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

package: $(PY)
	$(PY) -m pip install -q -e '.[test]'

# C NNUE kernel (scalar, AVX2, AVX-512, AVX-512 VNNI variants in one library, chosen at run time).
# Optional: without a C compiler the engine runs its Numba path.
kernel: $(PY)
	$(PY) -m nnue.tools.build_kernel || echo "C kernel not built: the Numba path will be used"

net: $(PY)
	$(PY) -m nnue.tools.get_net

# Compile every Numba function once so that the first game starts at once.
warm: package kernel
	$(PY) -m engine.tools.warm

# Optional: PyTorch (CPU wheel, pinned) for training our own nets (quantfish train / export).
train-deps: $(PY)
	$(PY) -m pip install -q torch==2.13.0

test: $(PY)
	$(PY) -m pytest -q

bench: $(PY)
	$(PY) -m engine.tools.bench_all

clean:
	rm -rf $(VENV) build *.egg-info
	rm -f nnue/kernel/libqfkernel.so
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
