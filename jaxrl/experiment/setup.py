"""What a run is built from: ``Launch`` (how a config is run) and ``Setup`` (the env,
evaluation env, agent and runner built from a resolved ``Experiment`` and a launch).

``build_setup(config, launch)`` finds every user mistake before anything is written: the
program and the execution are chosen from the tables of ``experiment.modes``, checked,
then built. ``build(run_dir)`` rebuilds the ``Setup`` of an existing run directory from
its ``config.yaml`` and ``launch.yaml``. ``Setup`` knows the members of a run (one, or
every seed and sweep point), their keys, and the runner state to start or resume from;
what differs between the fused and the host runner (whether its functions may be jitted,
what a checkpoint holds) is the ``Runner``'s to say (``jaxrl.runners.Runner``).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from jaxrl import agents
from jaxrl.experiment import modes, sweep
from jaxrl.experiment.config import Experiment, resolve
from jaxrl.experiment.launch import LAUNCH_FILE, Launch, read_launch
from jaxrl.runners import RunConfig, Runner
from jaxrl.runners.distributed import devices
from jaxrl.types import Agent, ConfigError, player_spec

__all__ = ["CONFIG_FILE", "LAUNCH_FILE", "Launch", "Policy", "Setup", "build", "build_setup"]
__all__ += ["new_run_dir", "read_launch", "write_run_files"]

CONFIG_FILE = "config.yaml"


class Policy(NamedTuple):
    """One trained agent of a run: its label (``""`` for a run of one agent, ``a{p}`` for
    player ``p``'s of independent agents), the agent and its state."""

    label: str
    agent: Any
    state: Any


def write_run_files(run_dir: Path, config: Experiment, launch: Launch) -> None:
    """Writes ``config.yaml`` and ``launch.yaml``, which alone rebuild the run."""
    (run_dir / CONFIG_FILE).write_text(config.to_yaml())
    (run_dir / LAUNCH_FILE).write_text(yaml.safe_dump(dataclasses.asdict(launch), sort_keys=False))


def new_run_dir(logdir: str | Path, config: Experiment, launch: Launch | None = None) -> Path:
    """A directory under ``logdir`` that did not exist before; never overwrites a run."""
    seed = f"s{config.run.seed}"
    if launch is not None and launch.seeds > 1:
        seed += f"x{launch.seeds}"
    if launch is not None and launch.sweep:
        seed += "_sweep"
    stem = f"{config.agent.name}_{config.env.name}_{seed}"
    stem = stem.replace("/", "-").replace(":", "-") + time.strftime("_%Y%m%d-%H%M%S")
    Path(logdir).mkdir(parents=True, exist_ok=True)
    for i in range(1000):
        path = Path(logdir) / (stem if i == 0 else f"{stem}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a new run directory under {logdir}")


@dataclasses.dataclass
class Setup:
    """Everything built from ``config.yaml`` and ``launch.yaml``: the agent, envs and the
    runner (vmapped over members when ``launch.batched``), and the member list."""

    config: Experiment
    launch: Launch
    env: Any
    eval_env: Any
    agent: Agent
    runner: Runner
    members: list[dict[str, Any]]  # {"seed": s, "agent.NAME": value, ...} per member
    mesh: Any = None  # members over devices (--seeds, --sweep)
    _hparams: Any = None
    env_mesh: Any = None  # one run's envs over devices (--devices)
    players: tuple[Any, ...] = ()  # independent agents: one per player (--agents)

    def policies(self, agent_state: Any) -> list[Policy]:
        """The run's policies in ``agent_state`` (the runner state's): one, labelled ``""``,
        or for independent agents one per player, labelled ``a0``, ``a1``, ...  (the
        prefix of their metrics), each with its agent and its part of the state."""
        if not self.players:
            return [Policy("", self.agent, agent_state)]
        return [
            Policy(f"a{p}", a, s)
            for p, (a, s) in enumerate(zip(self.players, agent_state, strict=True))
        ]

    @property
    def run_config(self) -> RunConfig:
        return self.config.run

    def keys(self) -> tuple[jax.Array, jax.Array]:
        """The training and evaluation keys: ``split(PRNGKey(seed))`` of each member."""
        seeds = [m["seed"] for m in self.members] if self.launch.batched else [self.config.run.seed]
        pairs = np.stack([np.asarray(jax.random.split(jax.random.PRNGKey(s))) for s in seeds])
        if not self.launch.batched:
            return jnp.asarray(pairs[0, 0]), jnp.asarray(pairs[0, 1])
        keys = sweep.shard(jnp.asarray(pairs[:, 0]), self.mesh)
        return keys, sweep.shard(jnp.asarray(pairs[:, 1]), self.mesh)

    def init_args(self) -> tuple:
        """The arguments of ``runner.init``: the key, and for a sweep each member's hparams."""
        key, _ = self.keys()
        if not self.launch.batched:
            return (key,)
        if self.launch.sweep and self._hparams is None:
            base = jax.jit(lambda k: self.agent.init(k).hparams)(jax.random.PRNGKey(0))
            stacked = sweep.member_hparams(base, self.launch.points(), self.launch.seeds)
            self._hparams = sweep.shard(stacked, self.mesh)
        return key, self._hparams

    def saved_shape(self) -> Any:
        """Shapes and dtypes of what a checkpoint holds (``runner.save`` of a state)."""
        return self.runner.saved_shape(*self.init_args())

    def shardings(self) -> Any:
        if self.env_mesh is not None:
            num_envs = self.config.env.num_envs
            return devices.env_shardings(self.env_mesh, self.saved_shape(), num_envs)
        if self.mesh is None:
            return None
        return sweep.state_shardings(self.mesh, self.saved_shape())

    def init_state(self) -> Any:
        """The initial runner state; a jittable runner's is committed to its devices as a
        restored one is (so both compile to the same program)."""
        if not self.runner.jittable:
            return self.runner.init(*self.init_args())
        shardings = self.shardings()
        if shardings is None:
            shardings = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        return jax.jit(self.runner.init, out_shardings=shardings)(*self.init_args())

    def resumed(self, saved: Any) -> Any:
        """The runner state to continue from a checkpoint's ``saved`` state."""
        return self.runner.restore(saved, self.init_state)


def _check_rollout(config: Experiment) -> None:
    """ConfigError unless a replay buffer holds at least one rollout of every env, and an
    on-policy agent's rollout splits into its minibatches (of whole env sequences, with a
    memory cell); the agent checks this too, but only when its program is traced."""
    run, num_envs = config.run, config.env.num_envs
    rollout = run.rollout_len * num_envs
    minibatches = config.agent.option("num_minibatches")
    if isinstance(minibatches, int) and minibatches > 0 and rollout % minibatches:
        raise ConfigError(
            f"agent '{config.agent.name}': rollout_len x num_envs = {rollout} is not "
            f"divisible by num_minibatches = {minibatches}"
        )
    cell = config.agent.option("cell")
    if cell is not None and isinstance(minibatches, int) and num_envs % minibatches:
        raise ConfigError(
            f"agent '{config.agent.name}' with a cell: num_envs = {num_envs} is not divisible "
            f"by num_minibatches = {minibatches} (a minibatch is whole env sequences)"
        )
    size = config.agent.option("buffer_size")
    if isinstance(size, int) and size < rollout:
        raise ConfigError(
            f"agent.buffer_size {size} must hold one rollout: >= run.rollout_len x "
            f"env.num_envs = {run.rollout_len} x {num_envs} = {rollout}"
        )


def build_setup(config: Experiment, launch: Launch, self_play: bool | None = None) -> Setup:
    """Builds env, evaluation env, agent and runner of ``config`` run as ``launch`` says:
    the first program and the first execution of ``experiment.modes`` that apply, each
    checked (ConfigError), then built. ``self_play``: a new run's ``--self-play`` flag,
    None where there is none (a resume, ``evaluate``)."""
    _check_rollout(config)
    env = config.env.make()
    eval_env = config.env.make(config.run.eval_episodes)
    program = modes.choose(modes.PROGRAMS, config, env)
    program.check(config, launch, env, self_play)
    players = tuple(agents.build(a, player_spec(env.spec, p)) for p, a in enumerate(config.agents))
    agent = players[0] if players else agents.build(config.agent, env.spec)
    parts = modes.Parts(env, eval_env, agent, players)
    execution = modes.choose(modes.EXECUTIONS, launch)
    execution.check(config, launch, parts, program)
    built = execution.build(config, launch, parts, program.runner(config, parts))
    members = launch.members(config.run.seed)
    return Setup(
        config,
        launch,
        env,
        eval_env,
        agent,
        built.runner,
        members,
        mesh=built.mesh,
        env_mesh=built.env_mesh,
        players=players,
    )


def build(run_dir: str | Path) -> Setup:
    """The ``Setup`` of an existing run directory, from its ``config.yaml`` and ``launch.yaml``."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise ConfigError(f"'{run_dir}' is not a run directory (it has no config.yaml)")
    launch = read_launch(run_dir)
    try:
        return build_setup(resolve(config_file=str(run_dir / CONFIG_FILE)), launch)
    except ConfigError as e:
        raise ConfigError(_with_import_hint(str(e), run_dir, launch)) from None


def _with_import_hint(error: str, run_dir: Path, launch: Launch) -> str:
    """``error`` of rebuilding ``run_dir``; for a name nothing registered (a user's torso,
    env or agent) it says which ``--import`` the run was trained with."""
    if not re.match(r"(unknown|cannot import) ", error) and "unknown torso" not in error:
        return error
    missing = [m for m in launch.imports if m not in sys.modules]
    what = re.sub(r" \(did you mean [^)]*\)", "", error.split(";")[0])
    if missing:
        given = " ".join(f"--import {m}" for m in missing)
        return f"{what}: '{run_dir}' was trained with {given}, which registers it; give {given}"
    return f"{error} (a name your code registers needs --import MODULE)"
