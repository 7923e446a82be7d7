# make demo: set up, build the course and grade the sample class. make test: set up and run the tests.
PYTHON ?= python3
VENV ?= .venv
# CI and laptops take the CPU build of torch 2.13.0; on a GPU box, `make TORCH=torch` takes the newest.
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: demo test build check bench clean

$(READY): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)" -e .
	touch $(READY)

demo: $(READY)
	$(BIN)/python -m autograder build
	$(BIN)/python -m autograder demo 02_vector_add

test: $(READY)
	$(BIN)/python -m pytest

build: $(READY)
	$(BIN)/python -m autograder build

check: $(READY)
	$(BIN)/python -m autograder build --check

# GPU only: the reference kernels against torch, torch.compile and the copy roof -> docs/benchmarks.md
bench: $(READY)
	$(BIN)/python benchmarks/kernels.py

clean:
	rm -rf $(VENV) build reports
