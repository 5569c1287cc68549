"""Training entry points from a checkout: ``python -m train.<name>`` runs
:mod:`bacepipe_env.train.<name>`, which an installed package runs as ``bacepipe train <name>``.
"""
