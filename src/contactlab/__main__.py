"""``python -m contactlab ...``: the ``contactlab`` command (:func:`contactlab.cli.main`), for a source tree
run without its console script (``PYTHONPATH=src python -m contactlab simulate ...``)."""
from .cli import main

main()
