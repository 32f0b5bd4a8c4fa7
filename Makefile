.DEFAULT_GOAL := help

.PHONY: help demo chat test faults install docs bench bench-quick soak

help: ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

install: ## create .venv with sayso and its dev tools
	scripts/setup dev

demo: ## serve the file-manager example and the concierge workflow: web UI and REST API on http://127.0.0.1:8000/
	scripts/demo $(ARGS)

chat: ## chat with the file-manager example in the terminal
	scripts/setup
	.venv/bin/sayso chat examples/files/sayso.yaml $(ARGS)

test: ## lint, type-check, build the docs and the wheel, and run the whole test suite
	scripts/test

faults: ## the fault-injection suite, long (FAULT_CASES=300): kill the decider at every step boundary; prints the counts
	scripts/faults $(ARGS)

docs: ## serve the documentation site on http://127.0.0.1:8001/ (PORT=8002 picks another; built with mkdocs from docs/)
	scripts/setup dev
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs serve --dev-addr 127.0.0.1:$(or $(PORT),8001)

bench: ## sayso vs LangGraph and pydantic-ai, whole matrix + footprint + profile + 30-min memory soak (~50 min in all); writes bench/RESULTS.md
	scripts/setup dev bench
	BENCH_VIA_MAKE=1 .venv/bin/python bench/run.py

soak: ## `sayso serve` under 20 clients for 30 minutes (MINUTES=3 for a short one): RSS start -> end, MB/min
	scripts/setup dev bench
	.venv/bin/python bench/soak.py --minutes $(or $(MINUTES),30)

bench-quick: ## H=0 cycle and workflow-cycle throughput vs the anchors in about a minute; last line is JSON
	scripts/setup dev bench
	.venv/bin/python bench/run.py --quick
