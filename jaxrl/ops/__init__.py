"""Pure math for RL: losses, returns, schedules, target updates, exploration.

No state and no I/O: every function here is pure, jittable and vmappable.
"""

from jaxrl.ops.distributional import (
    categorical_double_q_target,
    categorical_projection,
    categorical_q_values,
    categorical_support,
    categorical_td_loss,
)
from jaxrl.ops.exploration import epsilon_greedy
from jaxrl.ops.losses import huber_loss, l2_loss
from jaxrl.ops.policy_gradient import (
    normalize_advantages,
    policy_gradient_loss,
    ppo_clip_loss,
    value_loss,
)
from jaxrl.ops.prioritized import importance_weights
from jaxrl.ops.q_learning import q_learning_td_error
from jaxrl.ops.returns import NStepTarget, gae, n_step_bootstrap
from jaxrl.ops.schedules import linear_schedule
from jaxrl.ops.targets import soft_update
from jaxrl.ops.vtrace import VTraceOutput, vtrace

__all__ = [
    "categorical_double_q_target",
    "categorical_projection",
    "categorical_q_values",
    "categorical_support",
    "categorical_td_loss",
    "NStepTarget",
    "epsilon_greedy",
    "gae",
    "huber_loss",
    "importance_weights",
    "l2_loss",
    "linear_schedule",
    "n_step_bootstrap",
    "normalize_advantages",
    "policy_gradient_loss",
    "ppo_clip_loss",
    "q_learning_td_error",
    "soft_update",
    "value_loss",
    "VTraceOutput",
    "vtrace",
]
