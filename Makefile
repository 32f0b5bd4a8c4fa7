.DEFAULT_GOAL := help

.PHONY: help demo test install bench bench-quick

help: ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

install: ## create .venv with sayso and its dev tools
	scripts/setup dev

demo: ## chat with the file-manager example in the terminal
	scripts/demo $(ARGS)

test: ## lint, type-check and run the whole test suite
	scripts/test

bench: ## sayso vs LangGraph and pydantic-ai, whole matrix + footprint + profile (~25 min); writes bench/RESULTS.md
	scripts/setup dev bench
	BENCH_VIA_MAKE=1 .venv/bin/python bench/run.py

bench-quick: ## H=0 cycle throughput vs both anchors in under a minute; last line is JSON
	scripts/setup dev bench
	.venv/bin/python bench/run.py --quick
