# phd-book: every target sets itself up from the checked-in pins.
#   make book    execute every chapter (papermill) and build the site
#   make test    unit + property tests, quick book build, browser check
#   make lab     JupyterLab on the book (chapters open as notebooks)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PHD := $(VENV)/bin/phd
MATHJAX_VERSION := 3.2.2

# Data: an explicit PHD_DATA_DIR wins; otherwise use ../shared/data when present.
ifeq ($(origin PHD_DATA_DIR), undefined)
  ifneq ($(wildcard ../shared/data),)
    export PHD_DATA_DIR := $(abspath ../shared/data)
  endif
endif

DATASET ?= ml-1m
PROFILE ?= full
TEST_PROFILE ?= quick
JOBS ?= 2
BOOK_ARGS ?=

.PHONY: all venv data mathjax book book-quick test unit site-test lab clean distclean

all: book

$(VENV)/.stamp: requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# (this machine's pip config adds local index folders; their "is ignored"
	@#  notices are filtered out, pip's own exit status is kept)
	@# --no-compile: modules are byte-compiled when first imported, not all at install
	@set -o pipefail; $(PY) -m pip install --quiet --no-compile -r requirements.txt 2>&1 \
	  | { grep -v "is ignored: it is neither a file nor a directory" || true; }
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $@

venv: $(VENV)/.stamp

# MathJax 3 from npm, served by the site itself (no CDN). Kept out of _static/,
# whose every .js Jupyter Book 1 injects into every page.
_mathjax/mathjax/tex-chtml.js:
	@rm -rf _mathjax.tmp && mkdir -p _mathjax.tmp
	cd _mathjax.tmp && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null && tar xzf mathjax-$(MATHJAX_VERSION).tgz
	mkdir -p _mathjax.tmp/out/mathjax && cp -r _mathjax.tmp/package/es5/. _mathjax.tmp/out/mathjax/
	rm -rf _mathjax && mv _mathjax.tmp/out _mathjax && rm -rf _mathjax.tmp

mathjax: _mathjax/mathjax/tex-chtml.js

# ML-100K too, for a book on real data: "Travel" (parameter `second`) and "Cost
# at scale" (`sweep_datasets`) read it whatever DATASET is, so it is fetched
# here, at the start. A book on generated data (DATASET=synthetic...) reads
# it where it is on this machine and leaves it out, saying so, where it is
# not (`phd book build` settles it before any chapter runs).
data: venv
	@$(PHD) data ensure --dataset $(DATASET)
	$(if $(filter synthetic%,$(DATASET)),,@$(PHD) data ensure --dataset ml-100k)

# `phd data ensure` (target `data`): the dataset is found, or downloaded (hash-verified, with a
# progress bar), or make stops with one message saying how to provide it and
# that `make book DATASET=synthetic` builds the whole book offline.
book: venv data mathjax
	$(PHD) book build --dataset $(DATASET) --profile $(PROFILE) --param jobs=$(JOBS) $(BOOK_ARGS)

test: venv data mathjax
	$(PY) -m pytest -q -n 2 --durations=10 -m "not site" tests
	$(PHD) book build --dataset $(DATASET) --profile $(TEST_PROFILE) $(BOOK_ARGS)
	$(PY) -m pytest -q -m site tests

unit: venv
	$(PY) -m pytest -q -n 2 -m "not site" tests

book-quick: venv mathjax
	$(PHD) book build --dataset $(DATASET) --profile quick --param jobs=$(JOBS) $(BOOK_ARGS)

# the browser check of an already built site (_build/html)
site-test: venv
	$(PY) -m pytest -q -m site tests

# JupyterLab opens the .md chapters as notebooks (Jupytext); jupytext.toml
# keeps their headers stable, .jupyter/phd-book-lab.json makes "Jupytext
# Notebook" the default viewer for Markdown (installed into the venv's
# JupyterLab settings, never into your own). Extra options: LAB_ARGS=...
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.d/phd-book.json
$(LAB_SETTINGS): .jupyter/phd-book-lab.json $(VENV)/.stamp
	@mkdir -p $(dir $@) && cp $< $@

# (as root, in a container, Jupyter refuses to start without --allow-root)
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: venv $(LAB_SETTINGS)
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/book $(LAB_ROOT) $(LAB_ARGS)

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENV) _mathjax results .cache
