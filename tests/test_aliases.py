"""Option names from other libraries (``jaxrl.aliases``, issue 55 part 4): under presets,
converted from the run's length, and never answered with a "did you mean" of another
meaning. The names themselves are tested in tests/experiment/test_reliability.py."""

import dataclasses

import pytest

from jaxrl import agents, aliases
from jaxrl.experiment.config import resolve
from jaxrl.types import ConfigError


def _fields(agent: str) -> set[str]:
    return {f.name for f in dataclasses.fields(agents.entry(agent).config)}


def test_foreign_names_never_get_a_suggestion_of_another_meaning():
    """Every foreign name, for every agent: accepted, refused with its reason, or unknown
    saying what it is; never "did you mean" (``learning_rate`` -> ``learning_starts``)."""
    for agent in agents.available():
        if agents.entry(agent).config is None:
            continue
        fields = _fields(agent)
        for name in aliases.FOREIGN:
            if name in fields or aliases.canonical(name, fields) != name:
                continue
            with pytest.raises(ConfigError) as e:
                agents.resolve_config(agent, {name: 1})
            assert "did you mean" not in str(e.value), (agent, name, str(e.value))


def test_every_rule_names_fields_that_exist():
    every = set().union(*(_fields(a) for a in agents.available() if agents.entry(a).config))
    for name, foreign in aliases.FOREIGN.items():
        for rule in foreign.rules:
            assert rule.where in every | {""} and rule.to in every | {None}, (name, rule)
            assert (rule.to is None) == bool(rule.why) or rule.of_steps, (name, rule)


@pytest.mark.parametrize(
    "agent, env, given, saved",
    [
        ("dqn", "CartPole", {"agent.learning_rate": 1e-3}, {"lr": 1e-3}),
        ("ppo", "CartPole", {"agent.ent_coef": 0.0, "agent.n_epochs": 2},
         {"entropy_weight": 0.0, "update_epochs": 2}),
        ("sac", "Pendulum", {"agent.policy_lr": 1e-4}, {"actor_lr": 1e-4}),
    ],
)  # fmt: skip
def test_a_foreign_name_overrides_the_presets_value(agent, env, given, saved):
    resolved = resolve(agent=agent, env=env, overrides=given).agent.kwargs()
    assert {k: resolved[k] for k in saved} == saved


def test_exploration_fraction_is_epsilon_decay_steps_of_the_run():
    """SB3's and CleanRL's linear schedule over ``fraction * total_timesteps``: the same
    schedule over ``epsilon_decay_steps``, overriding the preset's."""
    steps, fraction = 40_000, 0.125
    got = resolve(
        agent="dqn", env="CartPole", steps=steps, overrides={"agent.exploration_fraction": fraction}
    ).agent.kwargs()
    assert got["epsilon_decay_steps"] == 5_000 and got["epsilon_schedule"] == "linear"


def test_epsilon_decay_implies_the_exponential_schedule(tmp_path):
    """machin's multiplicative ``epsilon_decay``, read only by the exponential schedule,
    given alone selects it (it was accepted and ignored)."""
    got = resolve(agent="dqn", env="CartPole", overrides={"agent.epsilon_decay": 0.99})
    assert got.agent.kwargs()["epsilon_schedule"] == "exponential"
    assert got.agent.kwargs()["epsilon_decay"] == 0.99
    plain = resolve(agent="dqn", env="CartPole").agent.kwargs()
    assert plain["epsilon_schedule"] == "linear"
    # A config file of one's own that gives epsilon_decay alone, as the command line.
    (tmp_path / "mine.yaml").write_text("agent: {name: dqn, epsilon_decay: 0.999}\n")
    from_file = resolve(config_file=str(tmp_path / "mine.yaml")).agent.kwargs()
    assert from_file["epsilon_schedule"] == "exponential"
    # A saved config.yaml names its schedule, and keeps it.
    saved = tmp_path / "config.yaml"
    saved.write_text(resolve(agent="dqn", env="CartPole").to_yaml())
    assert resolve(config_file=str(saved)).agent.kwargs()["epsilon_schedule"] == "linear"
