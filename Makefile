# Quantfish: `make install` prepares everything, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
QF := $(VENV)/bin/quantfish

.PHONY: install venv package kernel net warm test bench soak clean train-deps plot-deps cluster-deps ournet

install: package kernel net warm

venv: $(PY)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

package: $(PY)
	$(PY) -m pip install -q -e '.[test,cluster]'

# The C NNUE kernel, built into the user cache folder (the engine would build it on first use anyway).
# Optional: without a C compiler the engine runs its Numba path.
kernel: package
	$(QF) kernel --quiet || echo "C kernel not built: the Numba path will be used"

# Stockfish 15.1's net when it can be had (a good copy, a download, or `stockfish export_net`), into the user's
# nets folder; without it the engine plays with Quantfish's own net, shipped in the package.
net: package
	$(QF) net get || echo "Stockfish 15.1's net not available: the engine will use Quantfish's own net"

# Compile every Numba function once so that the first game starts at once.
warm: package kernel
	$(QF) warm

# Optional: PyTorch (pinned: 2.13.0 is a local CPU wheel here; an unpinned torch pulls a CUDA build of several
# GB) for training our own nets (quantfish train / export) and their tests, which skip without it.
train-deps: $(PY)
	$(PY) -m pip install -q torch==2.13.0

# Optional: matplotlib for `quantfish quant-report --plots` and its test, which skips without it.
plot-deps: $(PY)
	$(PY) -m pip install -q 'matplotlib>=3.7'

# Dask, for gendata and match on a cluster (docs/cluster.md).
cluster-deps: $(PY)
	$(PY) -m pip install -q -e '.[cluster]'

# Remake Quantfish's own net the way quantfish/nets/qf-*.nnue was made (quantfish/nets/README.md), in nine
# stages. The base: 270M positions the search evaluates in self-play, labelled with Stockfish 15.1's net's
# raw output (the teacher: install its net first, make net), one epoch of factorised training at L1 = 256
# under a cosine rate followed batch by batch; about 25 minutes of data and 45 of training on 2 cores. Then
# 390M new positions from other games (resumable chunks), and one more epoch from the base's weights; about
# 70 minutes of data and 40 of training. Then twice more: 300M more positions from other games and one more
# epoch from the last stage's weights; about 45 minutes of data and 20 to 30 of training each. Then three
# times: 150M more positions and one more epoch with a larger loss scale (--wdl-scale 500) and 150M positions
# in the shuffle buffer (about 5 GB of memory); about 25 minutes of data and 11 of training each. Then the
# seventh stage's net widened to L1 = 512 and one more epoch over those three stages' 450M positions; about
# 50 minutes. Last, 150M more positions and one more epoch over them at a lower rate (3e-4); about 25
# minutes of data and 16 of training (49 and 31 on a slower 2-core Zen 3). Needs make train-deps. The result
# is build/ournet/ournet.nnue. OURNET_BASE=FILE starts the second stage from an existing base,
# OURNET_STAGE2=FILE the third from an existing second stage, and so on to OURNET_STAGE8=FILE, the last from
# an existing eighth, such as the earlier shipped nets from the repository's history.
OURNET_GEN = --workers 2 --depth 4 --nodes 300 --random-plies 8
OURNET_BASE ?= build/ournet/base.nnue
OURNET_STAGE2 ?= build/ournet/stage2.nnue
OURNET_STAGE3 ?= build/ournet/stage3.nnue
OURNET_STAGE4 ?= build/ournet/stage4.nnue
OURNET_STAGE5 ?= build/ournet/stage5.nnue
OURNET_STAGE6 ?= build/ournet/stage6.nnue
OURNET_STAGE7 ?= build/ournet/stage7.nnue
OURNET_STAGE8 ?= build/ournet/stage8.nnue
OURNET_TRAIN = --factoriser --epochs 1 --batch-size 16384 --lr-schedule cosine --lr-min-ratio 0.05 \
	--lr-by-batch --val-fraction 0.005 --seed 1 --threads 2
build/ournet/base.nnue: | $(PY)
	mkdir -p build/ournet && rm -f build/ournet/d2.bin build/ournet/d3.bin
	$(QF) gendata -o build/ournet/d2.bin --positions 100000000 --seed 12 --sample 2 $(OURNET_GEN)
	$(QF) gendata -o build/ournet/d3.bin --positions 170000000 --seed 13 --sample 8 $(OURNET_GEN)
	$(QF) train --data build/ournet/d2.bin --data build/ournet/d3.bin --out build/ournet/base-run --lr 1e-3 \
		--l1 256 $(OURNET_TRAIN)
	$(QF) export build/ournet/base-run/last.pt -o $@

OURNET_CHUNKS = --sample 8 --chunk-positions 10000000 $(OURNET_GEN)
# $(call ournet_data,SEED,POSITIONS): build/ournet/cSEED.bin, resumed if a run stopped, kept once written.
ournet_data = mkdir -p build/ournet && { test -f build/ournet/c$(1).bin || \
	$(QF) gendata -o build/ournet/c$(1).bin --positions $(2) --seed $(1) $(OURNET_CHUNKS); }
# $(call ournet_epoch,RUN,INIT,SEEDS,OPTIONS,OUT): one epoch over the SEEDS' files from INIT's weights.
# OPTIONS come last: an option given twice keeps its last value, so they may override the rate and the seed.
define ournet_epoch
$(QF) train $(foreach seed,$(3),--data build/ournet/c$(seed).bin) --out build/ournet/$(1) --init-net $(2) \
	--lr 5e-4 $(OURNET_TRAIN) $(4)
$(QF) export build/ournet/$(1)/last.pt -o $(5)
endef

build/ournet/stage2.nnue: $(OURNET_BASE)
	$(call ournet_data,13,170000000)
	$(call ournet_data,14,160000000)
	$(call ournet_data,15,60000000)
	$(call ournet_epoch,run,$<,13 14 15,--l1 256,$@)

build/ournet/stage3.nnue: $(OURNET_STAGE2)
	$(call ournet_data,16,150000000)
	$(call ournet_data,17,150000000)
	$(call ournet_epoch,run3,$<,16 17,--l1 256,$@)

build/ournet/stage4.nnue: $(OURNET_STAGE3)
	$(call ournet_data,18,150000000)
	$(call ournet_data,19,150000000)
	$(call ournet_epoch,run4,$<,18 19,--l1 256,$@)

# The fifth to seventh stages: a larger loss scale, and the whole file in the shuffle buffer.
OURNET_LATE = --wdl-scale 500 --shuffle-buffer 150000000
build/ournet/stage5.nnue: $(OURNET_STAGE4)
	$(call ournet_data,21,150000000)
	$(call ournet_epoch,run5,$<,21,--l1 256 $(OURNET_LATE),$@)

build/ournet/stage6.nnue: $(OURNET_STAGE5)
	$(call ournet_data,23,150000000)
	$(call ournet_epoch,run6,$<,23,--l1 256 $(OURNET_LATE),$@)

build/ournet/stage7.nnue: $(OURNET_STAGE6)
	$(call ournet_data,24,150000000)
	$(call ournet_epoch,run7,$<,24,--l1 256 $(OURNET_LATE),$@)

build/ournet/stage8.nnue: $(OURNET_STAGE7)
	$(call ournet_data,21,150000000)
	$(call ournet_data,23,150000000)
	$(call ournet_data,24,150000000)
	$(call ournet_epoch,run8,$<,21 23 24,--l1 512 $(OURNET_LATE),$@)

ournet: $(OURNET_STAGE8)
	$(call ournet_data,25,150000000)
	$(call ournet_epoch,run9,$<,25,--l1 512 $(OURNET_LATE) --lr 3e-4 --seed 2,build/ournet/ournet.nnue)

test: $(PY)
	$(PY) -m pytest -q

# Every speed figure side by side in one run, next to Stockfish's (STOCKFISH=/path/to/stockfish: a build for
# this CPU is the fair yardstick).
bench: $(PY)
	$(PY) -m tools.bench_all

# On demand, not part of make test: 2,040 games against itself and the installed engines at bullet and
# blitz (tools/soak.py, about an hour on 2 cores); counts crashes, illegal moves, time losses and hangs.
# SOAK_ARGS="--scale 0.1" for a short run; the games are appended to build/soak/games.jsonl.
SOAK_ARGS ?=
soak: $(PY)
	mkdir -p build/soak
	$(PY) -m tools.soak --plan default --quiet --log build/soak/games.jsonl $(SOAK_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
