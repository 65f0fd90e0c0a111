"""The benchmark suite: each study a module run from the repo root, `python -m bench.<study>`, writing its
result file beside it. bench/README.md is the index, bench/RESULTS.md the headline numbers of the latest
result files (`python -m bench.results`), bench/harness.py what every study shares."""
