"""``jaxrl.checkpoint.restore(run_dir, step=None) -> (agent, agent_state, config)``: a
trained agent from a run directory, ready for ``agent.act``. See
``jaxrl.experiment.checkpoint`` for what a checkpoint holds."""

from jaxrl.experiment.checkpoint import checkpoint_steps
from jaxrl.experiment.run import restore

__all__ = ["checkpoint_steps", "restore"]
