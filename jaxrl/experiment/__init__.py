"""Host-side experiment machinery: configs and presets, logging, the chunked driver
(``run``), Orbax checkpoints and resume (``checkpoint``), seed and hyperparameter sweeps
(``sweep``)."""
