"""Tool-selection evaluation: how well a real model picks the intended tool from what the router
publishes, as the catalogue grows, with the budget, groups and tool search (docs/evals.md).

    python -m benchmarks evals --base-url URL --model NAME [--api-key KEY] [--sizes 10,100] ...

`requests.json` holds the labelled requests; `catalogue.py` builds the catalogues; `harness.py`
runs and scores them; `recall.py` measures the budget ranking's recall@k without a model.
"""
