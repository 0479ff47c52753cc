"""Host-side experiment machinery, in modules that import each other in one direction
only (``tests/experiment/test_import_graph.py`` checks that no jaxrl module imports one
that imports it back):

* ``config``: presets, config files and dotted overrides -> one typed ``Experiment``.
* ``logging``: metric rows and their writers (JSONL, CSV, TensorBoard).
* ``checkpoint``: Orbax checkpoints of a pytree of arrays and the driver's position; it
  knows nothing of runs.
* ``sweep``: seeds and hyperparameter grids as one vmapped runner.
* ``launch``: ``Launch``, how a config is run (seeds, sweep, checkpoints, devices, ...).
* ``modes``: the tables of programs and executions: what each applies to, its checks
  and how it builds its runner (``runners``, ``sweep``).
* ``setup``: ``Setup``: env, evaluation env, agent and runner built from an
  ``Experiment`` and a ``Launch`` by the first modes that apply (``modes``).
* ``report``: metric rows per member, the progress bar and the run's ``Summary``.
* ``guards``: between chunks, the non-finite guard (exit code 3), SIGINT/SIGTERM that
  save and stop (a second one aborts), and the watchdog of a wedged chunk (exit code 4).
* ``lock``: one writer per run directory.
* ``callbacks``: the hook protocol the driver runs between chunks, named by ``--callback``.
* ``warmstart``: ``--init-from``: which agent-state leaves are params, optimizer,
  normalizer, buffer, and taking them from another run's checkpoint.
* ``helptext``: ``--help``'s agent and env-family lines and run and env options, and
  ``--agent NAME --help``.
* ``driver``: the chunk loop between setup and report, with checkpoints
  (``setup``, ``report``, ``checkpoint``, ``logging``).
* ``run``: the entry points ``run_experiment``, ``resume_experiment`` and ``restore``.

What differs between a fused and a host runner is said by the ``jaxrl.runners.Runner``
itself (``jittable``, ``save``/``saved_shape``/``restore``, ``layout``); what differs
between envs is what they declare (``Env.host_loop``, ``state_is_portable``,
``vmappable``), read by ``modes`` alone.
"""
