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
from jaxrl.ops.exploration import epsilon_greedy, masked_epsilon_greedy
from jaxrl.ops.hl_gauss import hl_gauss_centers, hl_gauss_edges, hl_gauss_loss, hl_gauss_target
from jaxrl.ops.losses import huber_loss, l2_loss
from jaxrl.ops.policy_gradient import (
    normalize_advantages,
    policy_gradient_loss,
    ppo_clip_loss,
    value_loss,
)
from jaxrl.ops.prioritized import importance_weights, sequence_priority
from jaxrl.ops.q_learning import (
    munchausen_bonus,
    munchausen_target,
    q_learning_td_error,
    soft_bootstrap_value,
)
from jaxrl.ops.quantile import cosine_embedding, quantile_huber_loss, quantile_midpoints
from jaxrl.ops.returns import NStepTarget, gae, n_step_bootstrap, q_lambda_returns
from jaxrl.ops.schedules import (
    exponential_schedule,
    linear_schedule,
    piecewise_linear_schedule,
)
from jaxrl.ops.targets import hysteretic_target, soft_update
from jaxrl.ops.value_rescaling import inverse_value_rescale, value_rescale
from jaxrl.ops.vtrace import VTraceOutput, vtrace

__all__ = [
    "categorical_double_q_target",
    "categorical_projection",
    "categorical_q_values",
    "categorical_support",
    "categorical_td_loss",
    "NStepTarget",
    "cosine_embedding",
    "epsilon_greedy",
    "exponential_schedule",
    "gae",
    "hl_gauss_centers",
    "hl_gauss_edges",
    "hl_gauss_loss",
    "hl_gauss_target",
    "huber_loss",
    "importance_weights",
    "inverse_value_rescale",
    "l2_loss",
    "linear_schedule",
    "masked_epsilon_greedy",
    "munchausen_bonus",
    "munchausen_target",
    "n_step_bootstrap",
    "normalize_advantages",
    "piecewise_linear_schedule",
    "policy_gradient_loss",
    "ppo_clip_loss",
    "q_lambda_returns",
    "q_learning_td_error",
    "quantile_huber_loss",
    "quantile_midpoints",
    "soft_bootstrap_value",
    "hysteretic_target",
    "sequence_priority",
    "soft_update",
    "value_loss",
    "VTraceOutput",
    "value_rescale",
    "vtrace",
]
