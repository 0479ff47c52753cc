"""Hyperparameter search with Optuna over vmapped trials (``jaxrl tune``).

``tune.space`` reads search spaces (RL Baselines3 Zoo's built in), ``tune.trials`` trains
a batch of trials as programs grouped by shape and reports to Optuna, ``tune.study``
opens, resumes and summarises the study; ``python -m jaxrl.tune`` is the command. Design
notes: ``docs/how-to/tune.md``.
"""
