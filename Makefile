# Two commands do everything on a fresh machine:
#   make demo   create .venv if missing, install, simulate BACE-Pipe, compare the baselines,
#               regenerate the reproduction report, rank the policies on the online world
#               and under GPU failures, train a learned orderer for a minute
#               and overlay it with the heuristics
#   make test   create .venv if missing, install, run the test suite
#   make test-rllib   the same in .venv-rllib, under RLlib's gymnasium 1.2: the env and core
#               tests, and the RLlib PPO + action-masking example of docs/rllib.md
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
EXTRAS ?= dev,viz,train,mo,fast

export OMP_NUM_THREADS ?= 1

# The second venv: ray pins gymnasium 1.2.x, the main one has 1.4; the package runs on both.
RLLIB_VENV   ?= .venv-rllib
RLLIB_PY     := $(RLLIB_VENV)/bin/python
RLLIB_STAMP  := $(RLLIB_VENV)/.installed
RAY_VERSION  ?= 2.60.0
RLLIB_EXTRAS ?= dev,viz,train,rllib,mo

.PHONY: demo test test-rllib learned preemption headroom physical bench bench-large lint typecheck installcheck clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --progress-bar off --upgrade pip
	$(PY) -m pip install --progress-bar off -c constraints.txt -e '.[$(EXTRAS)]'
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
	@echo "The paper's claims under five semantics and three memory variants: out/reproduce/reproduction.md"
	@echo "The online world (Philly arrivals, hourly prices and carbon): out/online/online.md"
	@echo "Every policy against the GPU failure rate: out/faults/faults.md"

test: $(STAMP)
	$(PY) -m pytest -q

# torch stays constraints.txt's 2.13.0 (ray itself needs no torch; the rllib extra adds it)
$(RLLIB_STAMP): pyproject.toml constraints.txt
	@test -x $(RLLIB_PY) || $(PYTHON) -m venv $(RLLIB_VENV)
	$(RLLIB_PY) -m pip install --progress-bar off --upgrade pip
	$(RLLIB_PY) -m pip install --progress-bar off -c constraints.txt 'ray[rllib]==$(RAY_VERSION)' \
		-e '.[$(RLLIB_EXTRAS)]'
	@touch $(RLLIB_STAMP)

test-rllib: $(RLLIB_STAMP)
	@# the point of this venv: gymnasium 1.2 (what ray $(RAY_VERSION) pins), not the main one's
	$(RLLIB_PY) -c 'import gymnasium as g, ray; print("gymnasium", g.__version__, "ray", ray.__version__); \
		assert g.__version__.startswith("1.2."), "RAY_VERSION no longer pins gymnasium 1.2"'
	$(RLLIB_PY) -m pytest -q tests/envs tests/core tests/train/test_rllib.py \
		tests/experiments/test_ray_backend.py

# The learned orderers' evidence (about 2 h 15 min on 2 cores): train 3 seeds per recipe and env,
# play them, the env's planner and every heuristic on 200 held-out episodes per env, write
# benchmarks/results/learned.json and the docs/learned.md table, ship the pretrained
# agents. Finished runs are kept: a second call only evaluates and tabulates again.
learned: $(STAMP)
	$(PY) benchmarks/learned.py train
	$(PY) benchmarks/learned.py evaluate
	$(PY) benchmarks/learned.py table
	$(PY) benchmarks/learned.py ship

# The preemptive heuristics against the best non-preemptive one on held-out episodes of
# Online-v1 (500 and 80 jobs), Random-v2 and GeoPipe-v2 (about a minute on 2 cores): writes
# benchmarks/results/preemption.json and the tables of docs/preemption.md.
preemption: $(STAMP)
	$(PY) benchmarks/preemption.py run
	$(PY) benchmarks/preemption.py table

# The rollout planner against every env id's best heuristic under three lookaheads, on
# held-out episodes (about 15 minutes on 2 cores): writes benchmarks/results/headroom.json and
# the table of docs/headroom.md.
headroom: $(STAMP)
	$(PY) benchmarks/headroom.py run
	$(PY) benchmarks/headroom.py table

bench: $(STAMP)
	$(PY) benchmarks/bench_sim.py
	$(PY) benchmarks/bench_env.py
	$(PY) benchmarks/bench_train.py

# One large simulation (issue 25): 1,000,000 jobs on 256 regions arriving in the Philly trace's
# pattern, under BACE-Pipe; prints its CPU time, wall time and peak memory (about 6 minutes on
# one core, 2.6 GB peak). A tiny form: make bench-large BENCH_LARGE_ARGS="--jobs 2000 --regions 16".
BENCH_LARGE_ARGS ?=
bench-large: $(STAMP)
	$(PY) benchmarks/bench_large.py $(BENCH_LARGE_ARGS)

# The paper's world against the physical one (issue 29): overbooked link-intervals with the
# reverse traffic counted, and BACE-Pipe's rank among the paper's five (under a minute).
physical: $(STAMP)
	$(PY) benchmarks/physical.py run

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
	$(CHECK)/venv/bin/python -m pip install --progress-bar off -c constraints.txt '$(CHECK)/src[train]'
	cd $(CHECK)/run && ../venv/bin/bacepipe --version && ../venv/bin/python -m bacepipe_env --version
	cd $(CHECK)/run && ! ../venv/bin/python -c 'import agents' 2>/dev/null
	cd $(CHECK)/run && ! ../venv/bin/python -c 'import train' 2>/dev/null
	cd $(CHECK)/run && ../venv/bin/bacepipe train learn $(TINY) --logdir runs --run-name tiny
	cd $(CHECK)/run && ../venv/bin/bacepipe train compare --logdir runs --policies bace-pipe,fcfs
	cd $(CHECK)/run && ../venv/bin/bacepipe compare --seeds 2 \
		--policies bace-pipe,maskable_ppo:runs/tiny/model.zip --out out
	cd $(CHECK)/run && ../venv/bin/bacepipe evaluate --env-id bacepipe_env/GeoPipe-v2 \
		--policies sjf+finish-aware,pretrained --episodes 2 --first-seed 3000000
	rm -rf $(CHECK)

clean:
	rm -rf $(VENV) $(RLLIB_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info build dist
