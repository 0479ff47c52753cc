"""What a run is built from: ``Launch`` (how a config is run) and ``Setup`` (the env,
evaluation env, agent and runner built from a resolved config and a launch).

``build_setup(cfg, launch)`` finds every user mistake before anything is written;
``build(run_dir)`` rebuilds the ``Setup`` of an existing run directory from its
``config.yaml`` and ``launch.yaml``. ``Setup`` knows the members of a run (one, or every
seed and sweep point), their keys, and the runner state to start or resume from; what
differs between the fused and the host runner (whether its functions may be jitted, what
a checkpoint holds) is the ``Runner``'s to say (``jaxrl.runners.Runner``).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from jaxrl import agents, envs, runners
from jaxrl.envs.gymnasium import HostEnv
from jaxrl.experiment import callbacks, sweep, warmstart
from jaxrl.experiment.config import dump, env_kwargs, resolve
from jaxrl.experiment.logging import check_loggers
from jaxrl.runners import RunConfig, Runner
from jaxrl.runners.distributed import devices
from jaxrl.runners.distributed.a3c_workers import asynchronous_parts, make_a3c_runner
from jaxrl.runners.distributed.sebulba import make_sebulba_runner
from jaxrl.types import ConfigError

LAUNCH_FILE = "launch.yaml"
CONFIG_FILE = "config.yaml"


class Policy(NamedTuple):
    """One trained agent of a run: its label (``""`` for a run of one agent, ``a{p}`` for
    player ``p``'s of independent agents), the agent and its state."""

    label: str
    agent: Any
    state: Any


@dataclasses.dataclass(frozen=True)
class Launch:
    """How a config is run, saved as ``launch.yaml`` beside ``config.yaml``.

    Attributes:
      seeds: number of seeds ``run.seed, run.seed + 1, ...`` trained as one program.
      sweep: swept continuous hyperparameters ``{name: [values]}`` (``agent.name``).
      checkpoint_every: env steps between checkpoints (0: only at the end of the run).
      keep: checkpoints kept (the newest).
      loggers: where metric rows go besides ``metrics.jsonl``/``metrics.csv``
        (``jaxrl.experiment.logging.LOGGERS``: tensorboard, wandb).
      devices: local devices one run's envs are split over (``"all"``: every one;
        ``jaxrl.runners.distributed.devices``); 1 runs on the default device.
      watchdog: seconds one chunk may run before the run is ended as wedged, with its
        threads' stacks written (``guards.Watchdog``); 0 turns it off. The default, an
        hour, is far above any chunk of a built-in preset (seconds on a CPU).
      actor_threads: 0 runs the fused program; K >= 1 runs Sebulba's K actor threads and
        a learner on one host (``runners/distributed/sebulba.py``; JAX-native envs, one seed).
      queue_size: rollouts the actors may queue ahead of the learner (Sebulba).
      sync_actors: Sebulba's synchronous mode: no policy lag, repeatable bit for bit.
      callbacks: hooks the driver runs between chunks (``--callback``), each a spec
        ``NAME[:key=value,...]`` or ``MODULE:ATTR`` (``jaxrl.experiment.callbacks``).
      init_from: ``RUN[:STEP]`` whose checkpoint the run started from (``--init-from``;
        recorded as ``ABSOLUTE_RUN:STEP``; ``experiment.warmstart``), None for a fresh start.
      init_parts: what was taken from it (``warmstart.PARTS``; default ``params``).
    """

    seeds: int = 1
    sweep: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    checkpoint_every: int = 0
    keep: int = 3
    loggers: list[str] = dataclasses.field(default_factory=lambda: ["tensorboard"])
    devices: int | str = 1
    watchdog: float = 3600.0
    actor_threads: int = 0
    queue_size: int = 2
    sync_actors: bool = False
    callbacks: list[str] = dataclasses.field(default_factory=list)
    init_from: str | None = None
    init_parts: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        object.__setattr__(self, "loggers", check_loggers(self.loggers))
        object.__setattr__(self, "callbacks", callbacks.check(self.callbacks))
        if self.init_from is None and self.init_parts:
            raise ConfigError("--init-parts chooses what --init-from takes; give --init-from")
        if self.init_from is not None:
            parts = warmstart.check_parts(self.init_parts or ["params"])
            object.__setattr__(self, "init_parts", parts)
        devices = self.devices
        if devices != "all" and (isinstance(devices, bool) or not isinstance(devices, int)):
            raise ConfigError(f"--devices must be a positive integer or 'all', got {devices!r}")
        for flag, value, least in (
            ("--seeds", self.seeds, 1),
            ("--checkpoint-every", self.checkpoint_every, 0),
            ("--keep", self.keep, 1),
            ("--devices", 1 if self.devices == "all" else self.devices, 1),
            ("--actor-threads", self.actor_threads, 0),
            ("--queue-size", self.queue_size, 1),
        ):
            if value < least:
                raise ConfigError(f"{flag} must be >= {least}, got {value}")
        if not self.watchdog >= 0 or self.watchdog == float("inf"):
            raise ConfigError(f"--watchdog must be >= 0 seconds (0: off), got {self.watchdog}")

    @property
    def batched(self) -> bool:
        return self.seeds > 1 or bool(self.sweep)

    def members(self, seed: int) -> list[dict[str, Any]]:
        """``{"seed": s, "agent.NAME": value, ...}`` per member: every point of the sweep
        grid (``sweep.grid``) times the seeds ``seed, seed + 1, ...``; one for a single run."""
        return [
            {"seed": seed + i, **{f"agent.{k}": v for k, v in point.items()}}
            for point in sweep.grid(self.sweep)
            for i in range(self.seeds)
        ]


def read_launch(run_dir: str | Path) -> Launch:
    path = Path(run_dir) / LAUNCH_FILE
    if not path.is_file():
        return Launch()
    data = yaml.safe_load(path.read_text()) or {}
    try:
        return Launch(**data)
    except TypeError as e:
        raise ConfigError(f"'{path}' is not a valid launch file: {e}") from None


def write_run_files(run_dir: Path, cfg: dict[str, Any], launch: Launch) -> None:
    """Writes ``config.yaml`` and ``launch.yaml``, which alone rebuild the run."""
    (run_dir / CONFIG_FILE).write_text(dump(cfg))
    (run_dir / LAUNCH_FILE).write_text(yaml.safe_dump(dataclasses.asdict(launch), sort_keys=False))


def new_run_dir(logdir: str | Path, cfg: dict[str, Any], launch: Launch | None = None) -> Path:
    """A directory under ``logdir`` that did not exist before; never overwrites a run."""
    seed = f"s{cfg['run']['seed']}"
    if launch is not None and launch.seeds > 1:
        seed += f"x{launch.seeds}"
    if launch is not None and launch.sweep:
        seed += "_sweep"
    stem = f"{cfg['agent']['name']}_{cfg['env']['name']}_{seed}"
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

    cfg: dict[str, Any]
    launch: Launch
    env: Any
    eval_env: Any
    agent: Any
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
        return RunConfig(**self.cfg["run"])

    def keys(self) -> tuple[jax.Array, jax.Array]:
        """The training and evaluation keys: ``split(PRNGKey(seed))`` of each member."""
        seeds = (
            [m["seed"] for m in self.members] if self.launch.batched else [self.cfg["run"]["seed"]]
        )
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
            stacked = sweep.member_hparams(base, sweep.grid(self.launch.sweep), self.launch.seeds)
            self._hparams = sweep.shard(stacked, self.mesh)
        return key, self._hparams

    def saved_shape(self) -> Any:
        """Shapes and dtypes of what a checkpoint holds (``runner.save`` of a state)."""
        return self.runner.saved_shape(*self.init_args())

    def shardings(self) -> Any:
        if self.env_mesh is not None:
            num_envs = self.cfg["env"]["num_envs"]
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


def _check_sweep(cfg: dict[str, Any], launch: Launch, agent: Any) -> None:
    """ConfigError unless every swept name is a continuous hyperparameter of the agent and
    every swept value a valid value of its option."""
    name = cfg["agent"]["name"]
    agent_options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    hparams = jax.eval_shape(agent.init, jax.random.PRNGKey(0))
    sweep.check_sweep(name, getattr(hparams, "hparams", None), launch.sweep)
    for option, values in launch.sweep.items():
        for value in values:
            agents.resolve_config(name, {**agent_options, option: value})


def _check_rollout(cfg: dict[str, Any], run_cfg: RunConfig) -> None:
    """ConfigError unless a replay buffer holds at least one rollout of every env, and an
    on-policy agent's rollout splits into its minibatches (the agent checks this too, but
    only when its program is traced)."""
    rollout = run_cfg.rollout_len * cfg["env"]["num_envs"]
    minibatches = cfg["agent"].get("num_minibatches")
    if isinstance(minibatches, int) and minibatches > 0 and rollout % minibatches:
        raise ConfigError(
            f"agent '{cfg['agent']['name']}': rollout_len x num_envs = {rollout} is not "
            f"divisible by num_minibatches = {minibatches}"
        )
    size = cfg["agent"].get("buffer_size")
    if isinstance(size, int) and size < rollout:
        raise ConfigError(
            f"agent.buffer_size {size} must hold one rollout: >= run.rollout_len x "
            f"env.num_envs = {run_cfg.rollout_len} x {cfg['env']['num_envs']} = {rollout}"
        )


def build_setup(cfg: dict[str, Any], launch: Launch) -> Setup:
    """Builds env, evaluation env, agent and runner; ConfigError for a bad sweep."""
    run_cfg = RunConfig(**cfg["run"])
    _check_rollout(cfg, run_cfg)
    kwargs = env_kwargs(cfg)
    env = envs.make(cfg["env"]["name"], num_envs=cfg["env"]["num_envs"], **kwargs)
    eval_env = envs.make(cfg["env"]["name"], num_envs=run_cfg.eval_episodes, **kwargs)
    agent_options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    agent = agents.make(cfg["agent"]["name"], env.spec, **agent_options)
    runner, players = runners.make(agent, env, run_cfg, eval_env), ()
    if cfg.get("agents"):  # independent agents, one per player (runners/games/independent.py)
        runner, players = _independent(cfg, launch, env, eval_env, run_cfg)
    if jax.process_count() > 1:
        _check_job(launch)
    if launch.actor_threads:
        return _actor_learner(cfg, launch, env, eval_env, agent, run_cfg)
    if launch.devices != 1:
        members = launch.members(run_cfg.seed)
        return _split_envs(cfg, launch, env, eval_env, agent, runner, members)
    if not launch.batched:
        members = launch.members(run_cfg.seed)
        return Setup(cfg, launch, env, eval_env, agent, runner, members, players=players)
    if not runner.jittable:
        raise ConfigError(
            f"--seeds and --sweep need a JAX-native env; '{cfg['env']['name']}' is stepped "
            "on the host: run its seeds as separate jobs"
        )
    if env.spec.name.startswith("pz:"):
        raise ConfigError(
            f"--seeds and --sweep need a JAX-native env; '{env.spec.name}' is stepped on "
            "the host: run its seeds as separate jobs"
        )
    if launch.sweep:
        _check_sweep(cfg, launch, agent)
    members = launch.members(run_cfg.seed)
    host_bytes = sweep.check_host_envs((env, eval_env), len(members), launch.seeds)
    runner = sweep.batch_runner(runner)
    sweep.check_memory(runner, len(members), launch.seeds, host_bytes)
    # An env on this process's emulators (ale-py) runs its members as one vector env on
    # the default device: its members are not split over devices.
    mesh = sweep.mesh_for(len(members)) if env.state_is_portable else None
    return Setup(cfg, launch, env, eval_env, agent, runner, members, mesh, players=players)


def _independent(cfg, launch, env, eval_env, run_cfg) -> tuple[Runner, tuple[Any, ...]]:
    """The runner of ``cfg["agents"]`` and its agents; ConfigError for what it cannot do."""
    from jaxrl.runners.games.independent import make_multi_agent_runner

    if launch.sweep or launch.actor_threads or launch.devices != 1 or launch.init_from:
        raise ConfigError(
            "--agents runs with --seeds only: drop --sweep, --actor-threads, --devices, --init-from"
        )
    made = [
        agents.make(a["name"], env.spec, **{k: v for k, v in a.items() if k != "name"})
        for a in cfg["agents"]
    ]
    return make_multi_agent_runner(made, env, run_cfg, eval_env), tuple(made)


def _actor_learner(cfg, launch, env, eval_env, agent, run_cfg) -> Setup:
    """The ``Setup`` of a run with Sebulba's actor threads (``--actor-threads``)."""
    what = f"--actor-threads {launch.actor_threads}"
    if launch.batched or launch.devices != 1:
        raise ConfigError(f"{what} runs one seed on one device: drop --seeds, --sweep, --devices")
    if isinstance(env, HostEnv) or not env.state_is_portable:
        raise ConfigError(f"{what} needs a JAX-native env; '{cfg['env']['name']}' is not")
    if env.spec.num_players > 1:
        raise ConfigError(f"{what} runs a single-agent env; '{cfg['env']['name']}' has players")
    if asynchronous_parts(agent) is not None:  # A3C: workers apply their own gradients
        runner = make_a3c_runner(
            agent, env, run_cfg, eval_env, launch.actor_threads, launch.queue_size
        )
        return Setup(cfg, launch, env, eval_env, agent, runner, launch.members(run_cfg.seed))
    runner = make_sebulba_runner(
        agent, env, run_cfg, eval_env, launch.actor_threads, launch.queue_size, launch.sync_actors
    )
    return Setup(cfg, launch, env, eval_env, agent, runner, launch.members(run_cfg.seed))


def _check_job(launch: Launch) -> None:
    """ConfigError for what a job of several processes (``jax.distributed``) cannot run:
    it trains one run, its envs split over every device of the job (``--devices all``)."""
    what = f"a job of {jax.process_count()} processes"
    if launch.devices == 1:
        raise ConfigError(f"{what} splits one run over all its devices: give --devices all")
    for flag, given in (
        ("--seeds/--sweep", launch.batched),
        ("--actor-threads", launch.actor_threads),
        ("--callback", launch.callbacks),
        ("--init-from", launch.init_from),
    ):
        if given:
            raise ConfigError(f"{what} trains one run over its devices; drop {flag}")


def _split_envs(cfg, launch, env, eval_env, agent, runner, members) -> Setup:
    """The ``Setup`` of a run whose envs are split over ``launch.devices`` devices."""
    what = f"--devices {launch.devices}"
    if launch.batched:
        raise ConfigError(
            f"{what} splits one run's envs; --seeds and --sweep already spread their "
            "members over the local devices"
        )
    if not runner.jittable or not env.state_is_portable:
        raise ConfigError(f"{what} needs a JAX-native env; '{cfg['env']['name']}' is not")
    if env.spec.num_players > 1:
        raise ConfigError(f"{what} splits a single-agent run; '{cfg['env']['name']}' has players")
    num_envs = cfg["env"]["num_envs"]
    mesh = devices.env_mesh(launch.devices, num_envs)
    runner = devices.data_parallel(runner, mesh, num_envs)
    return Setup(cfg, launch, env, eval_env, agent, runner, members, env_mesh=mesh)


def build(run_dir: str | Path) -> Setup:
    """The ``Setup`` of an existing run directory, from its ``config.yaml`` and ``launch.yaml``."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise ConfigError(f"'{run_dir}' is not a run directory (it has no config.yaml)")
    cfg = resolve(config_file=str(run_dir / CONFIG_FILE))
    return build_setup(cfg, read_launch(run_dir))
