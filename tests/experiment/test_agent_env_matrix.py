"""Part 1 of issue 13: every agent runs on every built-in env it can act in, with no
flags. For each pair the config the CLI would resolve (a preset, or the agent's defaults
with its ``family: "*"`` preset) builds, and its whole program (runner init and one
chunk) traces with ``jax.eval_shape``: the shape and option checks that ran only when a
chunk was compiled (PPO's minibatch split) run here, without compiling or allocating.
A pair whose action space does not fit is refused with one line naming the space.
Every classic-control env and MinAtar Breakout is built for every agent; the envs of
``TRACED`` (no tuned preset for most agents) are traced too. Atari and MuJoCo (Brax,
whose env build alone takes seconds) pairs are left to ``benchmarks/agent_env_matrix.py``
(``--envs``), which also runs every pair and records what it reaches
(benchmarks/RESULTS.md)."""

import jax
import pytest

from jaxrl import agents, envs
from jaxrl.experiment.config import resolve
from jaxrl.experiment.setup import Launch, build_setup
from jaxrl.types import ConfigError, Discrete

ENVS = [n for n, group in ((n, envs.group(n)) for n in envs.available()) if group == "classic"]
ENVS += [n for n in envs.available() if envs.group(n) == "minatar"][:1]
AGENTS = list(agents.available())


def fits(agent: str, discrete: bool) -> bool:
    discrete_only = {"dqn", "rainbow", "qrdqn", "iqn", "mdqn", "pqn"}
    continuous_only = {"sac", "td3", "ddpg"}
    return agent not in (continuous_only if discrete else discrete_only)


@pytest.fixture(scope="module")
def spaces():
    try:
        return {name: isinstance(envs.make(name).spec.action_space, Discrete) for name in ENVS}
    except ConfigError as e:  # MinAtar not installed
        pytest.skip(str(e))


# The envs whose pairs are traced as well as built: those without a tuned preset for most
# agents (their defaults are what is tested), one per action space and observation kind;
# traced are the agents whose program is shaped by the rollout a preset gives (PPO's
# minibatches), and the random agent. The off-policy agents' programs are traced and run
# on every such env by benchmarks/agent_env_matrix.py.
TRACED = ("Acrobot-v1", "MountainCarContinuous-v0", "MinAtar-Breakout")


@pytest.mark.parametrize("env", ENVS)
def test_every_agent_builds_on_every_env_it_fits(env, spaces):
    """And is traced, one chunk of its whole program, on the envs of ``TRACED``."""
    for agent in AGENTS:
        if not fits(agent, spaces[env]):
            with pytest.raises(ConfigError, match="action space"):
                build_setup(resolve(agent=agent, env=env), Launch())
            continue
        cfg = resolve(agent=agent, env=env)
        setup = build_setup(cfg, Launch())
        if env not in TRACED or agent not in ("ppo", "a2c", "pqn", "random"):
            continue
        state = jax.eval_shape(setup.runner.init, jax.random.PRNGKey(0))
        _, metrics = jax.eval_shape(setup.runner.run_chunk, state)
        assert metrics["step"].shape == (setup.runner.layout.iterations_per_chunk,), agent


def test_presets_by_name_then_family_then_any():
    from jaxrl.experiment.config import find_preset

    assert find_preset("ppo", "CartPole-v1") == "cartpole-ppo"
    assert find_preset("ppo", "Acrobot-v1") == "ppo"  # family "*": no preset of its own
    assert find_preset("ppo", "ALE/Pong-v5") == "atari-ppo"
    assert find_preset("a2c", "Pendulum-v1") == "a2c"
    assert find_preset("random", "Acrobot-v1") is None
