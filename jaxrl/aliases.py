"""Option names users bring from other libraries: SB3, CleanRL, RLHive, machin and Emote.

``FOREIGN`` maps a foreign option name to what it means in each agent family: a ``Rule``
applies to an agent whose config has the rule's ``where`` field (``""``: every agent), and
either names the jaxrl option of the same meaning (``to``; ``config.yaml`` saves the jaxrl
name) or refuses the name with the reason (``why``; one line, exit code 2). A name none of
whose rules applies is an unknown option that gets no "did you mean": its spelling is
close to jaxrl names of other meanings (``learning_rate`` and ``learning_starts``).
``FOREIGN_SIGN`` holds options spelled as jaxrl spells them but meaning the opposite
sign elsewhere. docs/how-to/other-libraries.md shows the table.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

from jaxrl.types import ConfigError


class Rule(NamedTuple):
    """What a foreign name means for the agents whose config has the field ``where``
    (``""``: every agent): the jaxrl option ``to``, or a refusal because of ``why``.
    ``of_steps``: the value is a fraction of the run's steps, converted by the experiment
    (``epsilon_decay_steps = exploration_fraction * steps``)."""

    where: str
    to: str | None = None
    why: str = ""
    of_steps: bool = False


class Foreign(NamedTuple):
    """A foreign option name: what it is where it comes from, and its rules (the first that
    applies to an agent wins)."""

    means: str
    rules: tuple[Rule, ...]


def _same(to: str, means: str) -> Foreign:
    """A name that means jaxrl's ``to`` wherever an agent has ``to``."""
    return Foreign(means, (Rule(to, to),))


_ROLLOUT = "give --run.rollout_len (env steps per env between updates)"
_LR_EACH = (
    "sets the actor's and the critics' learning rates (and SAC's temperature's) at once; "
    "give --agent.actor_lr and --agent.critic_lr (and --agent.alpha_lr)"
)
_POLYAK = (
    "jaxrl's off-policy agents average the targets with --agent.tau after every critic "
    "step (target_update_period 0), or copy them every k-th critic step without averaging "
    "(--agent.target_update_period k)"
)

FOREIGN: dict[str, Foreign] = {
    # RLHive, machin, Emote
    "discount_rate": _same("gamma", "RLHive's discount factor"),
    "discount": _same("gamma", "machin's discount factor"),
    "min_replay_history": _same("learning_starts", "RLHive's steps before learning"),
    "test_epsilon": _same("eval_epsilon", "RLHive's evaluation epsilon"),
    "std_init": _same("sigma0", "RLHive's initial noisy-layer scale"),
    "atoms": _same("num_atoms", "RLHive's C51 support size"),
    "target_q_tau": _same("tau", "Emote's target-update fraction"),
    "t_entropy": _same("target_entropy", "Emote's SAC target entropy"),
    "use_terminal_masking": _same("terminal_masking", "Emote's SAC terminal-masking switch"),
    "mlp_layers": _same("hidden_sizes", "RLHive's dense widths"),
    "replay_size": _same("buffer_size", "machin's replay buffer capacity"),
    "gradient_max": _same("max_grad_norm", "machin's global gradient-norm clip"),
    "actor_learning_rate": Foreign(
        "machin's actor learning rate",
        # A2C and PPO: lr is the actor's once critic_lr is the critic's
        (Rule("actor_lr", "actor_lr"), Rule("critic_lr", "lr")),
    ),
    **{
        name: Foreign(
            f"machin's {name} (gradient passes per update)",
            (
                Rule(
                    "",
                    why=f"machin's A2C and PPO take {name} passes for one network each; "
                    "jaxrl's take update_epochs passes over both: give --agent.update_epochs",
                ),
            ),
        )
        for name in ("actor_update_times", "critic_update_times")
    },
    "critic_learning_rate": _same("critic_lr", "machin's critic learning rate"),
    "sub_policy_num": Foreign(
        "machin's MADDPG copies of each actor besides the first",
        (
            Rule(
                "sub_policies",
                why="machin's sub_policy_num counts each actor's copies besides the first "
                "(the ensemble's size - 1); jaxrl's sub_policies counts every policy: give "
                "--agent.sub_policies sub_policy_num + 1",
            ),
        ),
    ),
    "update_rate": Foreign(
        "machin's soft target-update rate",
        (
            Rule("updates_per_step", "tau"),
            Rule(
                "target_update_period",
                why="machin's update_rate averages the target at every update; jaxrl's "
                "Q-learning agents average with --agent.tau every --agent.target_update_period"
                " env steps: give both (--agent.target_update_period 1 updates every rollout)",
            ),
        ),
    ),
    "beta": Foreign(
        "RLHive's priority exponent",
        (
            Rule(
                "",
                why="RLHive's 'beta' is the priority exponent, jaxrl's 'alpha'; jaxrl's "
                "importance-sampling exponent is 'beta_start' (annealed to 1): give --agent.alpha",
            ),
        ),
    ),
    "target_net_update_fraction": Foreign(
        "RLHive's target-update fraction",
        (
            Rule(
                "",
                why="RLHive's 'target_net_update_fraction' weighs the other network than "
                "jaxrl's 'tau' (the online network's share of each target update): give "
                "--agent.tau with 1 - that fraction",
            ),
        ),
    ),
    # Stable-Baselines3 and CleanRL
    "learning_rate": Foreign(
        "SB3's and CleanRL's learning rate",
        (Rule("lr", "lr"), Rule("actor_lr", why=f"SB3's learning_rate {_LR_EACH}")),
    ),
    "policy_lr": _same("actor_lr", "CleanRL's actor learning rate"),
    "q_lr": Foreign(
        "CleanRL's critic learning rate",
        (
            Rule(
                "alpha_lr",
                why="CleanRL's SAC q_lr sets the critics' and the temperature's learning "
                "rates: give --agent.critic_lr and --agent.alpha_lr",
            ),
            Rule("critic_lr", "critic_lr"),
        ),
    ),
    "n_steps": Foreign(
        "SB3's n_steps",
        (
            Rule("n_step", "n_step"),  # SB3 >= 2.7: n-step returns of off-policy agents
            Rule(
                "gae_lambda",
                why="SB3's n_steps is PPO's and A2C's rollout length, not n-step returns: "
                + _ROLLOUT,
            ),
        ),
    ),
    "num_steps": Foreign(
        "CleanRL's rollout length",
        (Rule("", why=f"CleanRL's num_steps is the rollout length per env: {_ROLLOUT}"),),
    ),
    "train_freq": Foreign(
        "SB3's env steps between updates",
        (Rule("", why=f"SB3's train_freq is the env steps per env between updates: {_ROLLOUT}"),),
    ),
    "train_frequency": Foreign(
        "CleanRL's env steps between updates",
        (Rule("", why=f"CleanRL's train_frequency is the env steps between updates: {_ROLLOUT}"),),
    ),
    "gradient_steps": Foreign(
        "SB3's gradient steps per rollout",
        (
            Rule("updates_per_rollout", "updates_per_rollout"),
            Rule(
                "updates_per_step",
                why="SB3's gradient_steps are per rollout of train_freq env steps, jaxrl's "
                "updates_per_step per vector-env step: give --agent.updates_per_step "
                "gradient_steps / train_freq (with --run.rollout_len train_freq)",
            ),
        ),
    ),
    "target_update_interval": Foreign(
        "SB3's target-update period",
        (
            Rule("updates_per_rollout", "target_update_period"),
            Rule(
                "updates_per_step",
                why="SB3's SAC and TD3 average the targets with tau every "
                f"target_update_interval gradient steps; {_POLYAK}",
            ),
        ),
    ),
    "target_network_frequency": Foreign(
        "CleanRL's target-update period",
        (
            Rule("updates_per_rollout", "target_update_period"),
            Rule(
                "updates_per_step",
                why="CleanRL's SAC and TD3 average the targets with tau every "
                f"target_network_frequency steps; {_POLYAK}",
            ),
        ),
    ),
    "exploration_fraction": Foreign(
        "SB3's and CleanRL's fraction of the run that epsilon decays over",
        (Rule("epsilon_decay_steps", "epsilon_decay_steps", of_steps=True),),
    ),
    "exploration_initial_eps": _same("epsilon_start", "SB3's initial epsilon"),
    "exploration_final_eps": _same("epsilon_end", "SB3's final epsilon"),
    "start_e": _same("epsilon_start", "CleanRL's initial epsilon"),
    "end_e": _same("epsilon_end", "CleanRL's final epsilon"),
    "ent_coef": Foreign(
        "SB3's and CleanRL's entropy coefficient",
        (
            Rule("entropy_weight", "entropy_weight"),
            Rule(
                "autotune_alpha",
                why="SB3's SAC ent_coef is the temperature: a number fixes it (give "
                "--agent.alpha X --agent.autotune_alpha false), 'auto' learns it "
                "(--agent.autotune_alpha true)",
            ),
        ),
    ),
    "vf_coef": Foreign(
        "SB3's and CleanRL's value-loss coefficient",
        (
            Rule(
                "value_weight",
                why="SB3's vf_coef weighs E[(V - R)^2], CleanRL's vf_coef and jaxrl's "
                "value_weight weigh 0.5 E[(V - R)^2]: give --agent.value_weight (CleanRL's "
                "vf_coef, or 2 x SB3's)",
            ),
        ),
    ),
    "clip_range": _same("surrogate_loss_clip", "SB3's PPO ratio clip"),
    "clip_coef": _same("surrogate_loss_clip", "CleanRL's PPO ratio clip"),
    "clip_range_vf": Foreign(
        "SB3's PPO value clip",
        (
            Rule(
                "value_loss_clip",
                why="SB3's clip_range_vf takes the error of the clipped value alone; "
                "jaxrl's value_loss_clip the larger of the clipped and unclipped errors "
                "(OpenAI baselines, CleanRL): give --agent.value_loss_clip",
            ),
        ),
    ),
    "n_epochs": _same("update_epochs", "SB3's PPO epochs per rollout"),
    "norm_adv": _same("normalize_advantage", "CleanRL's advantage normalization"),
    "autotune": _same("autotune_alpha", "CleanRL's SAC temperature tuning"),
    "policy_frequency": _same("policy_delay", "CleanRL's TD3 actor-update period"),
    "target_policy_noise": _same("policy_noise", "SB3's TD3 target-policy noise"),
    "target_noise_clip": _same("noise_clip", "SB3's TD3 target-noise clip"),
    "total_timesteps": Foreign(
        "SB3's and CleanRL's run length",
        (Rule("", why="SB3's and CleanRL's total_timesteps is the run's length: give --steps"),),
    ),
    "n_timesteps": Foreign(
        "RL Zoo's run length",
        (Rule("", why="RL Zoo's n_timesteps is the run's length: give --steps"),),
    ),
}

# The batch size of SB3's PPO is a minibatch size (off-policy agents share the name).
FOREIGN["batch_size"] = Foreign(
    "a batch size (in SB3's PPO the minibatch size)",
    (
        Rule(
            "num_minibatches",
            why="SB3's PPO batch_size is the minibatch size; jaxrl's PPO splits each rollout "
            "into --agent.num_minibatches (rollout_len x num_envs / batch_size)",
        ),
    ),
)

FOREIGN_SIGN: dict[str, str] = {
    "entropy_weight": (
        "machin's 'entropy_weight' has the opposite sign: machin adds weight * entropy to "
        "the loss (a negative weight rewards entropy), jaxrl subtracts it (a bonus >= 0); "
        "give jaxrl's entropy_weight as minus machin's"
    ),
}


def rule(key: str, fields: Collection[str]) -> Rule | None:
    """The rule of foreign name ``key`` for an agent with ``fields`` (None where ``key`` is
    one of them, is no foreign name, or no rule of it applies)."""
    if key in fields or key not in FOREIGN:
        return None
    for r in FOREIGN[key].rules:
        if (not r.where or r.where in fields) and (r.to is None or r.to in fields):
            return r
    return None


def canonical(key: str, fields: Collection[str]) -> str:
    """The jaxrl field ``key`` names among ``fields`` (``key`` itself when it is one, or
    when it is no alias of one)."""
    found = rule(key, fields)
    return found.to if found is not None and found.to is not None else key


def refusal(key: str, fields: Collection[str]) -> str | None:
    """The explanation for a foreign option that means something else here, or None."""
    found = rule(key, fields)
    if found is None:
        return None
    if found.of_steps:
        return (
            f"'{key}' ({FOREIGN[key].means}) is converted with the run's --steps by "
            f"python -m jaxrl.train; give --agent.{found.to} (env steps) here"
        )
    return found.why or None


def unmatched(key: str, fields: Collection[str]) -> str | None:
    """What foreign name ``key`` means where none of its rules applies to an agent with
    ``fields`` (the clause of its "unknown option" line, in place of a "did you mean"
    that would name an option of another meaning), else None."""
    if key in fields or key not in FOREIGN or rule(key, fields) is not None:
        return None
    return f"'{key}' is {FOREIGN[key].means}, which this agent has no option for"


def with_steps_converted(
    options: dict[str, object], fields: Collection[str], steps: int, where: str
) -> dict[str, object]:
    """``options`` with each fraction of the run (``exploration_fraction``) replaced by its
    jaxrl option in env steps (``epsilon_decay_steps = fraction * steps``, SB3's and
    CleanRL's linear schedule exactly); ConfigError where the product is no whole number."""
    out = dict(options)
    for key, value in options.items():
        found = rule(key, fields)
        if found is None or not found.of_steps or found.to is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(f"{where} option '{key}' must be a fraction in [0, 1], got {value!r}")
        if found.to in options:
            raise ConfigError(f"{where}: '{key}' and '{found.to}' name the same option; give one")
        exact = value * steps
        if abs(exact - round(exact)) > 1e-9 * max(steps, 1):
            raise ConfigError(
                f"{where}: {key} {value:g} of --steps {steps} is {exact:g} env steps, not a "
                f"whole number; give --agent.{found.to} in env steps"
            )
        del out[key]
        out[found.to] = round(exact)
    return out


def with_implied_schedule(options: Mapping[str, Any] | None, prefix: str) -> Any:
    """``options`` (keys ``prefix + name``: ``"agent."`` for the command line's, ``""``
    for a config file's agent section) where machin's ``epsilon_decay``, which only the
    exponential schedule reads, given without ``epsilon_schedule`` selects it; on the
    command line, ConfigError where another schedule is given with it."""
    decay, schedule = prefix + "epsilon_decay", prefix + "epsilon_schedule"
    if options is None or decay not in options:
        return options
    given = options.get(schedule, "exponential")
    if given != "exponential" and not prefix:  # a file naming both (a saved config.yaml)
        return options
    if given != "exponential":
        raise ConfigError(
            f"--agent.epsilon_decay is the rate of --agent.epsilon_schedule exponential; the "
            f"'{given}' schedule does not read it (linear decays over "
            "--agent.epsilon_decay_steps)"
        )
    return {**options, schedule: "exponential"}
