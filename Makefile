# Two commands do everything on a fresh machine:
#   make demo   create .venv if missing, install, simulate BACE-Pipe, compare the baselines,
#               regenerate the reproduction report, train a learned orderer for a minute
#               and overlay it with the heuristics
#   make test   create .venv if missing, install, run the test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
EXTRAS ?= dev,viz,train

export OMP_NUM_THREADS ?= 1

.PHONY: demo test bench lint typecheck clean venv

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
	rm -rf out/runs/demo__maskable_ppo__0
	$(PY) -m train.learn --total-timesteps 20000 --eval-freq 4000 --n-eval 20 \
		--logdir out/runs --run-name demo__maskable_ppo__0
	$(PY) -m train.compare --logdir out/runs
	@echo
	@echo "TensorBoard (learning curve with the heuristics overlaid):"
	@echo "  $(VENV)/bin/tensorboard --logdir out/runs"
	@echo "TensorBoard (the policies of bacepipe compare):"
	@echo "  $(VENV)/bin/tensorboard --logdir out/compare/tb"
	@echo "The paper's claims under four semantics: out/reproduce/reproduction.md"

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

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info
