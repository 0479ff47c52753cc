"""The host driver: runs the fused training program in chunks, logging and checkpointing
between them, and resumes a run from its newest checkpoint.

``run_experiment(cfg, logdir, launch=Launch(...))`` builds the env, evaluation env, agent
and runner from a resolved config (``experiment.config.resolve``), creates a fresh run
directory (never reusing an existing one), writes ``config.yaml`` and ``launch.yaml``
(seeds, sweep, checkpointing), compiles the chunk program once (timed separately), then
runs chunk after chunk with a rich progress bar, writing one metrics row per chunk (per
member for seed and sweep runs), saving a checkpoint every ``checkpoint_every`` env steps
and at the end, and stopping early when an evaluation reaches ``run.stop_return`` (single
runs only). A final greedy evaluation of ``run.eval_episodes`` episodes closes the run.

``resume_experiment(run_dir)`` rebuilds the same program from the saved files, restores
the newest complete checkpoint, cuts the metrics files back to the rows that checkpoint
had written, and goes on. For a JAX-native env the runner state holds everything (agent
state with replay buffer, env state, observations, key, chunk counter), so a resumed run
is bit-identical to one that never stopped.

Runs of several members (``--seeds``, ``--sweep``) vmap the runner over the member axis
(``experiment.sweep``) and shard it over local devices; metrics rows then carry the
member's ``seed`` and swept values (``agent.lr``) as columns.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.envs.gymnasium import HostEnv
from jaxrl.experiment import checkpoint, sweep
from jaxrl.experiment.config import dump, env_kwargs, resolve
from jaxrl.experiment.logging import MetricsWriter, aggregate
from jaxrl.runners import RunConfig, Runner, make_runner
from jaxrl.runners.host import make_host_runner
from jaxrl.types import ConfigError
from jaxrl.validation import build_config, config_to_dict

LAUNCH_FILE = "launch.yaml"


@flax.struct.dataclass
class LearnerState:
    """What is checkpointed for an env whose state lives outside JAX (a Gymnasium host env,
    or ale-py's XLA vector env, whose state is a handle to this process's emulators): the
    agent state (replay buffer included), the PRNG key and the chunk counter. On resume the
    environments restart with fresh episodes."""

    agent_state: Any
    key: jax.Array
    chunk: jax.Array


@dataclasses.dataclass(frozen=True)
class Launch:
    """How a config is run, saved as ``launch.yaml`` beside ``config.yaml``.

    Attributes:
      seeds: number of seeds ``run.seed, run.seed + 1, ...`` trained as one program.
      sweep: swept continuous hyperparameters ``{name: [values]}`` (``agent.name``).
      checkpoint_every: env steps between checkpoints (0: only at the end of the run).
      keep: checkpoints kept (the newest).
    """

    seeds: int = 1
    sweep: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    checkpoint_every: int = 0
    keep: int = 3

    def __post_init__(self):
        if self.seeds < 1:
            raise ConfigError(f"--seeds must be >= 1, got {self.seeds}")
        if self.checkpoint_every < 0:
            raise ConfigError(f"--checkpoint-every must be >= 0, got {self.checkpoint_every}")
        if self.keep < 1:
            raise ConfigError(f"--keep must be >= 1, got {self.keep}")

    @property
    def batched(self) -> bool:
        return self.seeds > 1 or bool(self.sweep)


@dataclasses.dataclass
class Summary:
    run_dir: Path
    steps: int
    compile_time: float
    run_time: float
    sps: float
    final_eval_return: float  # the mean over members for seed and sweep runs
    best_eval_return: float  # NaN when no evaluation ran during training
    first_solved_time: float | None  # wall seconds (compile included) to reach stop_return
    solved: bool
    final_eval_returns: list[float] = dataclasses.field(default_factory=list)  # per member


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
    mesh: Any = None
    _hparams: Any = None

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

    @property
    def env_saved(self) -> bool:
        """Whether the env's state is a pytree that can be saved and restored (JAX-native
        envs); otherwise only a ``LearnerState`` is checkpointed."""
        return not isinstance(self.env, HostEnv) and self.env.state_is_portable

    def abstract_state(self) -> Any:
        """Shapes and dtypes of what a checkpoint holds (see ``saved``)."""
        if self.env_saved:
            return jax.eval_shape(self.runner.init, *self.init_args())
        key, _ = self.keys()
        agent_state = jax.eval_shape(self.agent.init, key)
        return LearnerState(agent_state, jax.eval_shape(lambda k: k, key), jnp.zeros((), jnp.int32))

    def saved(self, state: Any) -> Any:
        """The part of a runner state that a checkpoint holds."""
        if self.env_saved:
            return state
        return LearnerState(state.agent_state, state.key, jnp.asarray(state.chunk, jnp.int32))

    def resumed(self, saved: Any) -> Any:
        """The runner state to continue from a checkpoint's ``saved`` state (a fresh env
        state where the env's own could not be saved)."""
        if self.env_saved:
            return saved
        fresh = self.init_state()
        chunk = int(saved.chunk) if isinstance(fresh.chunk, int) else saved.chunk
        return dataclasses.replace(fresh, agent_state=saved.agent_state, key=saved.key, chunk=chunk)

    def shardings(self) -> Any:
        if self.mesh is None:
            return None
        return sweep.state_shardings(self.mesh, self.abstract_state())

    def init_state(self) -> Any:
        """The initial runner state, committed to its devices as a restored one is (so both
        compile to the same program)."""
        if not _jittable(self.runner):
            return self.runner.init(*self.init_args())
        shardings = self.shardings()
        if shardings is None:
            shardings = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        return jax.jit(self.runner.init, out_shardings=shardings)(*self.init_args())


def build_setup(cfg: dict[str, Any], launch: Launch) -> Setup:
    """Builds env, evaluation env, agent and runner; ConfigError for a bad sweep."""
    run_cfg = RunConfig(**cfg["run"])
    kwargs = env_kwargs(cfg)
    env = envs.make(cfg["env"]["name"], num_envs=cfg["env"]["num_envs"], **kwargs)
    eval_env = envs.make(cfg["env"]["name"], num_envs=run_cfg.eval_episodes, **kwargs)
    agent_options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    agent = agents.make(cfg["agent"]["name"], env.spec, **agent_options)
    host = isinstance(env, HostEnv)  # a Python-stepped env: runners/host.py, no jit
    runner = (make_host_runner if host else make_runner)(agent, env, run_cfg, eval_env)
    if host and launch.batched:
        raise ConfigError(
            f"--seeds and --sweep need a JAX-native env; '{cfg['env']['name']}' is stepped "
            "on the host: run its seeds as separate jobs"
        )
    members: list[dict[str, Any]] = [{"seed": run_cfg.seed}]
    mesh = None
    if launch.batched:
        if launch.sweep:
            hparams = jax.eval_shape(agent.init, jax.random.PRNGKey(0))
            sweep.check_sweep(cfg["agent"]["name"], getattr(hparams, "hparams", None), launch.sweep)
            for name, values in launch.sweep.items():  # each value checked as an option
                for value in values:
                    agents.resolve_config(cfg["agent"]["name"], {**agent_options, name: value})
        members = [
            {"seed": run_cfg.seed + i, **{f"agent.{k}": v for k, v in point.items()}}
            for point in sweep.grid(launch.sweep)
            for i in range(launch.seeds)
        ]
        runner = sweep.batch_runner(runner)
        mesh = sweep.mesh_for(len(members))
    return Setup(cfg, launch, env, eval_env, agent, runner, members, mesh)


def build(run_dir: str | Path) -> Setup:
    """The ``Setup`` of an existing run directory, from its ``config.yaml`` and ``launch.yaml``."""
    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"'{run_dir}' is not a run directory (it has no config.yaml)")
    cfg = resolve(config_file=str(run_dir / "config.yaml"))
    return build_setup(cfg, read_launch(run_dir))


def read_launch(run_dir: Path) -> Launch:
    path = Path(run_dir) / LAUNCH_FILE
    if not path.is_file():
        return Launch()
    data = yaml.safe_load(path.read_text()) or {}
    try:
        return Launch(**data)
    except TypeError as e:
        raise ConfigError(f"'{path}' is not a valid launch file: {e}") from None


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


def _fmt(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.1f}"


def run_experiment(
    cfg: dict[str, Any],
    logdir: str | Path = "runs",
    console: Console | None = None,
    launch: Launch | None = None,
) -> Summary:
    """Trains as ``cfg`` and ``launch`` say, logging into a new run directory under ``logdir``."""
    launch = launch or Launch()
    setup = build_setup(cfg, launch)  # every mistake is found before anything is written
    run_dir = new_run_dir(logdir, cfg, launch)
    (run_dir / "config.yaml").write_text(dump(cfg))
    (run_dir / LAUNCH_FILE).write_text(yaml.safe_dump(dataclasses.asdict(launch), sort_keys=False))
    return _drive(setup, run_dir, console or Console(), None)


def resume_experiment(
    run_dir: str | Path,
    steps: int | None = None,
    console: Console | None = None,
    checkpoint_every: int | None = None,
    keep: int | None = None,
) -> Summary:
    """Continues ``run_dir`` from its newest complete checkpoint, appending to its metrics.

    ``steps`` raises the run's total env steps (the one config value a resume may change);
    ``checkpoint_every`` and ``keep`` replace those of ``launch.yaml``.
    """
    run_dir = Path(run_dir)
    checkpoint.pick_step(run_dir, None)  # a missing run or checkpoint: one line, no change
    setup = build(run_dir)
    changes = {}
    if checkpoint_every is not None:
        changes["checkpoint_every"] = checkpoint_every
    if keep is not None:
        changes["keep"] = keep
    if changes:
        setup.launch = dataclasses.replace(setup.launch, **changes)
    if steps is not None and steps != setup.cfg["run"]["steps"]:
        run = config_to_dict(build_config(RunConfig, {**setup.cfg["run"], "steps": steps}, "run"))
        setup = build_setup({**setup.cfg, "run": run}, setup.launch)
    restored = checkpoint.load(run_dir, setup.abstract_state(), None, setup.shardings())
    (run_dir / "config.yaml").write_text(dump(setup.cfg))
    (run_dir / LAUNCH_FILE).write_text(
        yaml.safe_dump(dataclasses.asdict(setup.launch), sort_keys=False)
    )
    return _drive(setup, run_dir, console or Console(), restored)


def _drive(setup: Setup, run_dir: Path, console: Console, restored: Any) -> Summary:
    """The chunk loop shared by a new run and a resumed one."""
    cfg, launch, runner = setup.cfg, setup.launch, setup.runner
    run_cfg = RunConfig(**cfg["run"])
    start = time.perf_counter()
    meta = restored.meta if restored is not None else {}
    start_chunk = int(meta.get("chunk", 0))
    keep_rows = int(meta["rows"]) if restored is not None else None
    purge = restored.step + 1 if restored is not None else None
    writer = MetricsWriter(run_dir, keep_rows=keep_rows, purge_step=purge)
    saver = checkpoint.CheckpointWriter(run_dir, keep=launch.keep)
    what = f"{len(setup.members)} members, " if launch.batched else ""
    verb = f"resuming at step {restored.step:,}" if restored is not None else "->"
    console.print(
        f"[bold]jaxrl[/] {cfg['agent']['name']} on {cfg['env']['name']} "
        f"({what}{cfg['env']['num_envs']} envs, preset: {cfg.get('preset')}) {verb} {run_dir}"
    )

    _, eval_key = setup.keys()
    compile_start = time.perf_counter()
    state = setup.resumed(restored.state) if restored is not None else setup.init_state()
    run_chunk = runner.run_chunk
    if _jittable(runner):
        run_chunk = jax.jit(run_chunk, donate_argnums=0).lower(state).compile()
    compile_time = time.perf_counter() - compile_start

    steps_per_chunk = runner.iterations_per_chunk * runner.steps_per_iteration
    total_steps = runner.num_chunks * steps_per_chunk
    best = _nan(meta.get("best"))
    first_solved = meta.get("first_solved")
    run_time = float(meta.get("run_time", 0.0))
    elapsed = float(meta.get("time", 0.0))
    rows = int(meta.get("rows", 0))
    steps = start_chunk * steps_per_chunk
    saved_step = restored.step if restored is not None else None

    def save() -> None:
        nonlocal saved_step
        progress_meta = dict(
            env_steps=steps,
            chunk=chunk_done,
            rows=rows,
            best=best,
            first_solved=first_solved,
            run_time=run_time,
            time=elapsed + time.perf_counter() - start,
        )
        saver.save(steps, setup.saved(state), progress_meta)
        saved_step = steps

    chunk_done, stopped = start_chunk, False
    progress = Progress(
        BarColumn(bar_width=12),
        MofNCompleteColumn(),
        TextColumn("{task.fields[sps]} sps  return {task.fields[ret]}  eval {task.fields[eval]}"),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
    )
    with progress, saver, writer:
        task = progress.add_task(
            "training", total=total_steps, completed=steps, sps="-", ret="-", eval="-"
        )
        while chunk_done < runner.num_chunks and not stopped:
            chunk_start = time.perf_counter()
            state, metrics = run_chunk(state)
            chunk_done += 1
            metrics = jax.device_get(metrics)
            chunk_time = time.perf_counter() - chunk_start
            run_time += chunk_time
            now = elapsed + time.perf_counter() - start
            sps = steps_per_chunk / chunk_time
            chunk_rows = _rows(setup, metrics)
            for row in chunk_rows:
                row["time"], row["sps"] = now, sps
                prefix = f"seed{row['seed']}/" if launch.batched else ""
                prefix += "".join(f"{k}={v:g}/" for k, v in row.items() if k.startswith("agent."))
                writer.write(row, tag_prefix=prefix)
            rows += len(chunk_rows)
            prev, steps = steps, chunk_rows[0]["step"]
            evals = [r["eval_return"] for r in chunk_rows]
            eval_mean = math.nan if any(map(math.isnan, evals)) else float(np.mean(evals))
            if not math.isnan(eval_mean):
                best = eval_mean if math.isnan(best) else max(best, eval_mean)
            returns = [
                r["episode_return"] for r in chunk_rows if not math.isnan(r["episode_return"])
            ]
            progress.update(
                task,
                completed=steps,
                sps=f"{sps * len(chunk_rows):,.0f}",
                ret=_fmt(float(np.mean(returns)) if returns else math.nan),
                eval=_fmt(eval_mean),
            )
            every = launch.checkpoint_every
            if every and steps // every > prev // every:
                save()
            stop = run_cfg.stop_return
            if not launch.batched and stop is not None and eval_mean >= stop:
                first_solved = now
                stopped = True
        if saved_step != steps:
            save()

    compile_start = time.perf_counter()
    evaluate = runner.evaluate
    if _jittable(runner):
        evaluate = jax.jit(evaluate).lower(state.agent_state, eval_key).compile()
    compile_time += time.perf_counter() - compile_start
    finals = np.asarray(jax.device_get(evaluate(state.agent_state, eval_key)), np.float64)
    finals = finals.reshape(len(setup.members), -1).mean(axis=1)
    summary = Summary(
        run_dir=run_dir,
        steps=steps,
        compile_time=compile_time,
        run_time=run_time,
        sps=steps * len(setup.members) / run_time if run_time else math.nan,
        final_eval_return=float(finals.mean()),
        best_eval_return=best,
        first_solved_time=first_solved,
        solved=first_solved is not None,
        final_eval_returns=[float(f) for f in finals],
    )
    _write_summary(summary, run_dir)
    _print_summary(summary, setup, run_cfg, console)
    return summary


def _jittable(runner: Any) -> bool:
    """False for a runner whose functions step environments on the host (a runner with
    ``jittable = False``): the driver then calls them as they are."""
    return getattr(runner, "jittable", True)


def _nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def _rows(setup: Setup, metrics: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """One metrics row per member (one row for a single run)."""
    if not setup.launch.batched:
        return [aggregate(metrics)]
    rows = []
    for b, member in enumerate(setup.members):
        row = aggregate({k: v[b] for k, v in metrics.items()})
        rows.append({**row, **member})
    return rows


def _write_summary(summary: Summary, run_dir: Path) -> None:
    data = {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(summary).items()}
    data = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in data.items()}
    (run_dir / "summary.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def _print_summary(summary: Summary, setup: Setup, run_cfg: RunConfig, console: Console) -> None:
    table = Table(title="summary", show_header=False)
    table.add_row(
        "env steps", f"{summary.steps:,}" + (" per member" if setup.launch.batched else "")
    )
    table.add_row("compile time", f"{summary.compile_time:.1f} s")
    table.add_row("run time", f"{summary.run_time:.1f} s ({summary.sps:,.0f} steps/s)")
    table.add_row("best evaluation", _fmt(summary.best_eval_return))
    table.add_row(
        f"final evaluation ({run_cfg.eval_episodes} episodes)", _fmt(summary.final_eval_return)
    )
    if setup.launch.batched:
        for member, final in zip(setup.members, summary.final_eval_returns, strict=True):
            name = ", ".join(f"{k} {v:g}" for k, v in member.items())
            table.add_row(f"  {name}", _fmt(final))
    if run_cfg.stop_return is not None and not setup.launch.batched:
        solved = f"yes, after {summary.first_solved_time:.1f} s" if summary.solved else "no"
        table.add_row(f"reached {run_cfg.stop_return:g}", solved)
    table.add_row("run directory", str(summary.run_dir))
    console.print(table)
