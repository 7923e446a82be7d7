# make demo: set up, build the course and grade the sample class. make test: set up and run the tests.
PYTHON ?= python3
VENV ?= .venv
# CI and laptops take the CPU build of torch 2.13.0; on a GPU box, `make TORCH=torch` takes the newest.
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: demo test lint build check bench clean lab lab-student

$(READY): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)" -e .
	touch $(READY)

demo: $(READY)
	$(BIN)/python -m autograder build
	$(BIN)/python -m autograder demo 02_vector_add

# Two lanes (tests/conftest.py): the classes graded a notebook per core in one, the rest of the
# suite beside them in the other. On a GPU machine run plain `pytest`, one test at a time, so that
# no test shares the GPU with another's timing.
test: lint
	$(BIN)/python -m pytest -n 2

# The project's Python (the package, tests, benchmarks, the notebook masters): ruff, as pyproject.toml sets it.
lint: $(READY)
	$(BIN)/ruff check .

build: $(READY)
	$(BIN)/python -m autograder build

check: $(READY)
	$(BIN)/python -m autograder build --check

# GPU only: the reference kernels against torch, torch.compile and the copy roof -> docs/benchmarks.md
bench: $(READY)
	$(BIN)/python benchmarks/kernels.py

# JupyterLab on the course, for the instructor (lab/instructor/): nbgrader's formgrader, Create
# Assignment, Validate. The venv's bin/ goes on PATH: the formgrader runs its `alembic`.
# `make lab-student`: what a student sees (lab/student/): Validate and the Assignment List, in
# build/student/, the student's home. Both share nbgrader's exchange build/exchange/, so Release,
# Fetch, Submit and Collect work on one machine. Options for jupyter lab go in LAB_ARGS:
# `make lab LAB_ARGS="--port 9000 --no-browser"` (as root: --allow-root).
LAB_ARGS ?=
LAB_ENV = PATH="$(abspath $(BIN)):$$PATH"

lab: $(READY)
	mkdir -p build && mkdir -p -m 777 build/exchange
	$(LAB_ENV) JUPYTER_CONFIG_PATH="$(CURDIR)/lab/instructor" $(BIN)/jupyter lab $(LAB_ARGS)

lab-student: $(READY)
	mkdir -p build/student && mkdir -p -m 777 build/exchange
	cd build/student && $(LAB_ENV) JUPYTER_CONFIG_PATH="$(CURDIR)/lab/student" "$(abspath $(BIN))/jupyter" lab $(LAB_ARGS)

clean:
	rm -rf $(VENV) build reports
