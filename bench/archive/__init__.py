"""Studies that answered a one-off question and are no longer re-run (`make bench` leaves them out), kept
with their results; each still runs as `python -m bench.archive.<study>`. bench/README.md lists them."""
