# Two commands do everything on a fresh machine:
#   make demo   create .venv if missing, install, simulate BACE-Pipe, compare the baselines,
#               regenerate the reproduction report, rank the policies on the online world
#               and under GPU failures, train a learned orderer for a minute
#               and overlay it with the heuristics
#   make test   create .venv if missing, install, run the test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
EXTRAS ?= dev,viz,train

export OMP_NUM_THREADS ?= 1

.PHONY: demo test bench lint typecheck installcheck clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[$(EXTRAS)]'
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bacepipe simulate --scenario paper --seed 0
	$(VENV)/bin/bacepipe compare --scenario paper --seeds 10 --out out/compare
	$(VENV)/bin/bacepipe reproduce --out out/reproduce
	$(VENV)/bin/bacepipe online --out out/online
	$(VENV)/bin/bacepipe faults --out out/faults
	rm -rf out/runs/demo__maskable_ppo__0
	$(VENV)/bin/bacepipe train learn --total-timesteps 20000 --eval-freq 4000 --n-eval 20 \
		--logdir out/runs --run-name demo__maskable_ppo__0
	$(VENV)/bin/bacepipe train compare --logdir out/runs
	@echo
	@echo "TensorBoard (learning curve with the heuristics overlaid):"
	@echo "  $(VENV)/bin/tensorboard --logdir out/runs"
	@echo "TensorBoard (the policies of bacepipe compare):"
	@echo "  $(VENV)/bin/tensorboard --logdir out/compare/tb"
	@echo "The paper's claims under four semantics: out/reproduce/reproduction.md"
	@echo "The online world (Philly arrivals, hourly prices and carbon): out/online/online.md"
	@echo "Every policy against the GPU failure rate: out/faults/faults.md"

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/bench_sim.py
	$(PY) benchmarks/bench_env.py

lint: $(STAMP)
	$(PY) -m ruff check bacepipe_env agents train tests benchmarks
	$(PY) -m ruff format --check bacepipe_env agents train tests benchmarks

typecheck: $(STAMP)
	$(PY) -m mypy

# The package as a user gets it: a plain new venv, `pip install '.[train]'` (not editable, from a
# copy of the sources), and the documented commands run from an empty folder.
CHECK := $(abspath build/installcheck)
TINY  := --total-timesteps 256 --n-steps 64 --batch-size 32 --n-epochs 1 --eval-freq 128 \
	--n-eval 2 --checkpoint-freq 256 --no-progress

installcheck:
	rm -rf $(CHECK) && mkdir -p $(CHECK)/src $(CHECK)/run
	cp -r pyproject.toml README.md LICENSE bacepipe_env $(CHECK)/src/
	find $(CHECK)/src -name __pycache__ -prune -exec rm -rf {} +
	$(PYTHON) -m venv $(CHECK)/venv
	$(CHECK)/venv/bin/python -m pip install --quiet -c constraints.txt '$(CHECK)/src[train]'
	cd $(CHECK)/run && ../venv/bin/bacepipe --version && ../venv/bin/python -m bacepipe_env --version
	cd $(CHECK)/run && ! ../venv/bin/python -c 'import agents' 2>/dev/null
	cd $(CHECK)/run && ! ../venv/bin/python -c 'import train' 2>/dev/null
	cd $(CHECK)/run && ../venv/bin/bacepipe train learn $(TINY) --logdir runs --run-name tiny
	cd $(CHECK)/run && ../venv/bin/bacepipe train compare --logdir runs --policies bace-pipe,fcfs
	cd $(CHECK)/run && ../venv/bin/bacepipe compare --seeds 2 \
		--policies bace-pipe,maskable_ppo:runs/tiny/model.zip --out out
	rm -rf $(CHECK)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info build dist
