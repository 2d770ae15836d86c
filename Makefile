.PHONY: demo test lint format
demo:
	python3 dev.py demo
test:
	python3 dev.py test
lint:
	python3 dev.py lint
format:
	.venv/bin/python -m ruff format . && .venv/bin/python -m ruff check --fix .
