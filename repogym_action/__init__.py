"""repogym_action: the GitHub Action around repogym.

This package is the glue between GitHub (the runner's inputs and file commands, the event
payload, the REST API) and the engine; it imports :mod:`repogym`, never the other way
round. ``repogym-action`` (:mod:`repogym_action.main`) is what the container runs.
"""
