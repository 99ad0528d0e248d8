.PHONY: demo test bench lint
demo: ; python3 dev.py demo
test: ; python3 dev.py test
bench: ; python3 dev.py bench
lint: ; python3 dev.py lint
