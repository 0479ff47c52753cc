"""Every preset judged over K vmapped seeds: the interquartile mean of its final return.

    python benchmarks/presets.py [--presets cartpole-dqn ...] [--seeds 32] [--steps N]
        [--group G] [--group-dir DIR] [--env GAME] [--out-dir benchmarks/presets]
        [--data benchmarks/data/presets.yaml] [--label RUN] [--source JOURNAL]
        [--results FILE.md]

Each preset (``jaxrl/presets``) runs as one program of K members (``--seeds``; the
``--seeds K`` program of ``python -m jaxrl.train``, in groups of ``--group`` members where
memory needs it) for the preset's budget (``--steps`` cuts it, said in the table), with
the preset's evaluations (greedy, ``run.eval_episodes`` episodes every ``run.eval_every``
env steps) and no early stop. Per member: the final greedy return (at least 20 episodes
of the final policy, ``experiment.driver.final_returns``), the first env step at which an
evaluation reached the target, and the area under the evaluation curve (the trapezoid
mean of the evaluations over the steps, in return units). Per preset, printed and recorded
in ``--data`` (``benchmarks/data/presets.yaml``: the preset's row replaced or added, and a
run entry with the machine, date, load, command, commit and ``--source``, the journal
entry that discusses it; ``python benchmarks/tables.py`` then writes the tables; a
Markdown section is also appended to ``--results`` where one is given): the IQM of the
final returns with its 95% stratified-bootstrap CI (``jaxrl.stats``, Agarwal et al.
2021), the fraction of members at or above the target at
the end, the median first-solve step, wall and compile time, and the published anchor
with its source; and a plot of the IQM evaluation curve with its 95% bootstrap band
(``jaxrl.plot``) and the per-member numbers (JSON) in ``--out-dir``. With ``--group-dir``
each finished group's numbers are kept there and a group already there is read instead of
run: a table too long to run in one go (32 Pendulum TD3 members, MinAtar at 1M steps) is
finished by running the same command again (wall and compile times are the groups' sums).
A group too long to run in one go goes on too: every ``SAVE_EVERY_S`` seconds of running its
whole state (``experiment.checkpoint``, Orbax) and its evaluations so far are saved in
``<group file>.progress/``, which the same command continues from (bit for bit the chunks
an unbroken run would have run) and removes once the group's file is written. SIGINT or
SIGTERM stops a group after its current chunk with its progress saved (exit code 128 +
the signal's number; a second signal aborts at once, as ``jaxrl.train``).
``--env`` trains the presets on another game (a family preset on another game of its
family: ``--presets minatar-dqn --env MinAtar-Asterix``), in rows and files of their own.

Targets: CartPole 475 (solved, as ``stop_return``), Acrobot -100, Pendulum -200 (issue
21's goals); MinAtar has none. Atari and MuJoCo presets need a GPU or host envs that
cannot be vmapped over seeds: listed as not run. A preset name that does not exist, or
``--seeds`` below 1, is one line on stderr and exit code 2, nothing written.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl import stats
from jaxrl.experiment import checkpoint, guards
from jaxrl.experiment.config import Experiment, load_config_file, presets, resolve
from jaxrl.experiment.driver import compile_chunk, compile_evaluate, final_returns
from jaxrl.experiment.setup import Launch, build_setup
from jaxrl.plot import plot
from jaxrl.types import ConfigError

DATA = Path(__file__).resolve().parent / "data" / "presets.yaml"
SAVE_EVERY_S = 900.0  # a running group's progress is saved this often (seconds of running)
# FrozenLake-v1: Gymnasium's reward_threshold (success rate of the slippery 4x4 map).
TARGETS = {"CartPole-v1": 475.0, "Acrobot-v1": -100.0, "Pendulum-v1": -200.0, "FrozenLake-v1": 0.70}
NOT_VMAPPABLE = ("atari", "mujoco-")  # host or foreign-call envs: one seed per process
# The game a family preset (``env: {family: minatar}``, no name) is judged on: the game
# its issue names (issue 12: MinAtar-Breakout). Without it the preset would resolve to the
# default env (CartPole) and its options for the family would be dropped.
FAMILY_GAMES = {"minatar": "MinAtar-Breakout"}

# Published final returns: (value, source). One run each unless the source says otherwise.
ANCHORS = {
    "cartpole-dqn": "500.0 +- 0.0: RL Zoo (DLR-RM/rl-baselines3-zoo benchmark.md), dqn, 50k steps",
    "cartpole-ppo": "500.0 +- 0.0: RL Zoo benchmark.md, ppo, 100k steps; PureJaxRL ppo.py "
    "reaches 500",
    "cartpole-a2c": "500.0 +- 0.0: RL Zoo benchmark.md, a2c, 500k steps",
    "cartpole-rainbow": "no published Rainbow CartPole-v1 figure; RL Zoo qrdqn 500.0 +- 0.0 "
    "(50k steps)",
    "cartpole-qrdqn": "500.0 +- 0.0: RL Zoo benchmark.md, qrdqn, 50k steps",
    "pendulum-sac": "-157.0 +- 88.7: RL Zoo benchmark.md, sac, Pendulum-v0, 20k steps",
    "pendulum-td3": "-151.9 +- 90.2: RL Zoo benchmark.md, td3, Pendulum-v0, 20k steps",
    "pendulum-ddpg": "-152.1 +- 94.3: RL Zoo benchmark.md, ddpg, Pendulum-v0, 20k steps",
    "pendulum-ppo": "-169.9 +- 104.9: RL Zoo benchmark.md, ppo, Pendulum-v0, 2M steps",
    "acrobot-dqn": "-76.6 +- 11.8: RL Zoo benchmark.md, dqn, Acrobot-v1, 100k steps",
    "acrobot-ppo": "-73.5 +- 18.2: RL Zoo benchmark.md, ppo, Acrobot-v1, 1M steps",
    "frozenlake-tabular_q": "0.70: Gymnasium's FrozenLake-v1 reward_threshold (slippery 4x4, "
    "100-step episodes)",
    "cartpole-impala": "no published IMPALA CartPole-v1 figure; RL Zoo a2c 500.0 +- 0.0",
    "minatar-dqn": "MinAtar paper (Young & Tian 2019) and its README: DQN on Breakout as "
    "curves only (30 runs, 5M frames), no table; no PureJaxRL MinAtar DQN figure found; "
    "minatar-dqn 15.5 [13.5, 17.15] over 3 seeds at 1M (2026-11-25)",
    "minatar-pqn": "no published 1M-step figure (purejaxql's MinAtar runs are 10M steps); "
    "minatar-dqn 15.5 [13.5, 17.15] over 3 seeds (2026-11-25)",
    "cartpole-iqn": "no published IQN CartPole-v1 figure; RL Zoo qrdqn 500.0 +- 0.0 (50k steps)",
    "cartpole-a3c": "no published A3C CartPole-v1 figure; RL Zoo a2c 500.0 +- 0.0 (500k steps)",
    "cartpole-apex_dqn": "no published Ape-X CartPole-v1 figure; RL Zoo dqn 500.0 +- 0.0 "
    "(50k steps)",
    "pendulum-apex_ddpg": "no published Ape-X DDPG Pendulum figure; RL Zoo ddpg -152.1 +- 94.3 "
    "(Pendulum-v0, 20k steps)",
    "pendulum-mbpo": "no published MBPO Pendulum figure (Janner et al. 2019 run MuJoCo tasks); "
    "RL Zoo sac -157.0 +- 88.7 (Pendulum-v0, 20k steps)",
}


def preset_config(
    name: str, steps: int | None = None, overrides: dict | None = None, env: str | None = None
) -> Experiment:
    """The resolved config of preset ``name``, on ``env`` if given, else the preset's env:
    the one it names, else its family's game (``FAMILY_GAMES``), else the default env.
    ``run.stop_return`` is off (the whole budget runs), then the dotted ``overrides``
    apply."""
    section = load_config_file(presets()[name]).get("env", {})
    game = env or section.get("name") or FAMILY_GAMES.get(section.get("family"))
    overrides = {"run.stop_return": None, **(overrides or {})}
    return resolve(config_file=str(presets()[name]), env=game, steps=steps, overrides=overrides)


def run_preset(
    name: str,
    seeds: int,
    steps: int | None,
    group: int,
    overrides: dict | None = None,
    group_dir: str | Path | None = None,
    env: str | None = None,
) -> dict[str, Any]:
    """Trains preset ``name`` (with dotted ``overrides`` such as ``{"agent.loss": "mse"}``)
    as ``seeds`` members (seeds ``run.seed`` to ``run.seed + seeds - 1``) in groups of
    ``group``; per-member results and the times. With ``group_dir``, each finished group is
    written there (``group_file``) and a group found there is read instead of run, so a
    table too long to run in one go is finished by the same call made again."""
    config = preset_config(name, steps, overrides, env)
    cfg = config.to_dict()
    target = TARGETS.get(config.env.name)
    groups = []
    first_seed = cfg["run"]["seed"]  # 0 unless overridden (``run.seed``: held-out seeds)
    for first in range(0, seeds, group):
        size = min(group, seeds - first)
        cfg["run"]["seed"] = first_seed + first
        path = None if group_dir is None else group_file(group_dir, name, cfg, size)
        if path is not None and path.exists():
            saved = json.loads(path.read_text())
            groups.append({**saved, "curves": np.asarray(saved["curves"]).reshape(size, -1)})
            continue
        progress = None if path is None else path.with_suffix(".progress")
        result = run_group(config.with_run(seed=first_seed + first), size, target, progress)
        groups.append(result)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            kept = {k: v for k, v in result.items() if k not in ("agent", "agent_state")}
            partial = path.with_suffix(".partial")  # a stop mid-write leaves no bad group
            partial.write_text(json.dumps({**kept, "curves": result["curves"].tolist()}))
            partial.replace(path)
            shutil.rmtree(progress, ignore_errors=True)
    cfg["run"]["seed"] = first_seed
    return dict(
        name=name,
        cfg=cfg,
        target=target,
        finals=np.concatenate([g["finals"] for g in groups]),
        solves=[s for g in groups for s in g["solves"]],
        aucs=np.concatenate([g["aucs"] for g in groups]),
        steps=np.asarray(groups[-1]["steps"]),
        curves=np.concatenate([g["curves"] for g in groups]),
        episodes=groups[-1]["episodes"],
        compile=sum(g["compile"] for g in groups),
        run=sum(g["run"] for g in groups),
        wall=sum(g["wall"] for g in groups),
        agent=groups[-1].get("agent"),
        agent_state=groups[-1].get("agent_state"),  # the last group's members, if run
    )


def group_file(group_dir: str | Path, name: str, cfg: dict[str, Any], size: int) -> Path:
    """Where ``run_preset`` keeps one group's results: named by the preset, the group's
    first seed and size, and a digest of the resolved config (another config, another
    file)."""
    digest = hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()
    return Path(group_dir) / f"{name}-seed{cfg['run']['seed']}x{size}-{digest[:12]}.json"


def run_group(
    config: Experiment,
    size: int,
    target: float | None,
    progress: Path | None = None,
) -> dict[str, Any]:
    """One program of ``size`` members (seeds ``config.run.seed`` on): per member the
    final greedy return, first-solve step and area under the curve; the evaluation curves
    ``[size, evaluations]``, and the compile, run and wall seconds (summed over the parts
    of a stopped and continued run).

    With ``progress`` (a directory), the runner state and the evaluations so far are saved
    there after a chunk whenever ``SAVE_EVERY_S`` seconds of running have passed since the
    last save or a SIGINT or SIGTERM came (then saved and
    ``guards.Interrupted`` raised), and a group whose ``progress`` holds a checkpoint
    continues from it."""
    start = time.perf_counter()
    setup = build_setup(config, Launch(seeds=size))
    done = dict(chunks=0, steps=[], evals=[], compile=0.0, run=0.0, wall=0.0)
    t0 = time.perf_counter()  # compile time includes making (or reading) the first state
    if progress is not None and checkpoint.checkpoint_steps(progress):
        shape, shardings = setup.saved_shape(), setup.shardings()
        restored, _ = checkpoint.load_readable(progress, shape, None, shardings)
        state, done = setup.resumed(restored.state), restored.meta["done"]
        print(f"{progress.name}: continuing after chunk {done['chunks']}", file=sys.stderr)
    else:
        state = setup.init_state()
    run_chunk = compile_chunk(setup.runner, state)
    compile_time = time.perf_counter() - t0
    steps_seen = done["steps"]
    evals = [np.asarray(e, np.float32) for e in done["evals"]]  # eval_return's dtype
    saving = 0.0  # seconds spent saving progress: not run time
    t0 = last_save = time.perf_counter()
    signals = None if progress is None else guards.StopSignals()
    with signals or contextlib.nullcontext():
        for chunk in range(done["chunks"], setup.runner.num_chunks):
            state, metrics = run_chunk(state)
            metrics = jax.device_get(metrics)
            last = np.asarray(metrics["eval_return"]).reshape(size, -1)[:, -1]
            if np.isfinite(last).all():
                steps_seen.append(int(np.asarray(metrics["step"]).reshape(size, -1)[0, -1]))
                evals.append(last)
            now = time.perf_counter()
            stop = signals is not None and signals.requested is not None
            if progress is None or not (stop or now - last_save >= SAVE_EVERY_S):
                continue
            meta = dict(
                chunks=chunk + 1,
                steps=steps_seen,
                evals=[e.tolist() for e in evals],
                compile=done["compile"] + compile_time,
                run=done["run"] + now - t0 - saving,
                wall=done["wall"] + now - start,
            )
            with checkpoint.CheckpointWriter(progress, keep=1) as writer:
                writer.save(chunk + 1, setup.runner.save(state), {"done": meta})
            last_save = time.perf_counter()
            saving += last_save - now
            print(
                f"{progress.name}: saved after chunk {chunk + 1} of {setup.runner.num_chunks} "
                f"({last_save - now:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
            if stop:
                name = signal.Signals(signals.requested).name
                raise guards.Interrupted(
                    f"{progress.name}: stopped by {name} after chunk {chunk + 1} of "
                    f"{setup.runner.num_chunks}, its progress saved; the same command "
                    "continues it",
                    signals.requested,
                )
    jax.block_until_ready(state)
    run_time = done["run"] + time.perf_counter() - t0 - saving
    _, eval_key = setup.keys()
    t0 = time.perf_counter()
    evaluate = compile_evaluate(setup.runner, state.agent_state, eval_key)
    compile_time += done["compile"] + time.perf_counter() - t0
    episodes = setup.run_config.eval_episodes
    finals = final_returns(evaluate, state.agent_state, eval_key, size, episodes)
    curves = np.stack(evals, axis=1) if evals else np.zeros((size, 0))
    solves = []
    for m in range(size):
        reached = [s for s, v in zip(steps_seen, curves[m], strict=True) if target and v >= target]
        solves.append(reached[0] if reached else None)
    return dict(
        finals=[float(finals[m].mean()) for m in range(size)],
        solves=solves,
        aucs=[area_under(steps_seen, curves[m]) for m in range(size)],
        steps=steps_seen,
        curves=curves,
        episodes=int(finals.shape[1]),
        compile=compile_time,
        run=run_time,
        wall=done["wall"] + time.perf_counter() - start,
        agent=setup.agent,
        agent_state=state.agent_state,
    )


def area_under(steps: list[int], values: np.ndarray) -> float:
    """The trapezoid mean of ``values`` over ``steps`` (NaN with fewer than 2 points)."""
    if len(steps) < 2:
        return float(values[0]) if len(steps) else math.nan
    x, y = np.asarray(steps, np.float64), np.asarray(values, np.float64)
    return float(np.sum((y[1:] + y[:-1]) / 2 * np.diff(x)) / (x[-1] - x[0]))


def number_format(values: np.ndarray) -> str:
    """One decimal for returns such as CartPole's; three where every value is within
    [-1, 1] (success rates such as FrozenLake's)."""
    return ".3f" if np.all(np.abs(values) <= 1.0) else ".1f"


def table_row(r: dict[str, Any]) -> str:
    ci = stats.interval_estimate(r["finals"])
    target = r["target"]
    at = "-" if target is None else f"{int(np.sum(r['finals'] >= target))}/{len(r['finals'])}"
    solved = [s for s in r["solves"] if s is not None]
    median = f"{np.median(solved):,.0f} ({len(solved)} solved)" if solved else "never"
    if target is None:
        median = "-"
    cfg = r["cfg"]
    num = number_format(r["finals"])
    return (
        f"| {r['name']} | {len(r['finals'])} | {cfg['run']['steps']:,} | "
        f"{float(ci.point):{num}} [{float(ci.lower):{num}}, {float(ci.upper):{num}}] | "
        f"{'-' if target is None else f'{target:g}'} | {at} | {median} | "
        f"{stats.iqm(r['aucs']):{num}} | {r['compile']:.0f} | {r['wall']:.0f} | "
        f"{ANCHORS.get(r['name'], '-')} |"
    )


HEADER = (
    "| preset | seeds | env steps | final IQM [95% CI] | target | at target (end) | "
    "median first-solve step | IQM of AUC | compile s | wall s | published anchor |\n"
    "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", metavar="NAME")
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--steps", type=int, help="cut every preset's budget to this")
    parser.add_argument("--env", help="train every preset on this env (e.g. MinAtar-Asterix)")
    parser.add_argument("--group", type=int, help="members per program (default: all)")
    parser.add_argument(
        "--group-dir",
        help="keep each finished group (and a running group's progress) here; a group found "
        "here is read, not run again",
    )
    parser.add_argument("--out-dir", default=str(Path(__file__).resolve().parent / "presets"))
    parser.add_argument(
        "--data",
        default=str(DATA),
        help="the presets table's data file, where the rows and the run are recorded",
    )
    parser.add_argument("--results", help="a Markdown file the table is also appended to")
    parser.add_argument("--label", default="", help="the run's name in --data (default: dated)")
    parser.add_argument(
        "--source",
        default="benchmarks/journal/ (no entry named: pass --source)",
        help="the journal entry that discusses the run",
    )
    args = parser.parse_args(argv)
    try:
        available = presets()
        names = args.presets or [n for n in available if not n.startswith(NOT_VMAPPABLE)]
        unknown = [n for n in names if n not in available]
        if unknown:
            raise ConfigError(f"unknown preset '{unknown[0]}'; available: {', '.join(available)}")
        if args.seeds < 1:
            raise ConfigError(f"--seeds must be >= 1, got {args.seeds}")
        skipped = [n for n in names if n.startswith(NOT_VMAPPABLE)]
        if skipped:
            raise ConfigError(
                f"preset '{skipped[0]}' cannot run as one vmapped program on this machine "
                "(host or foreign-call envs); run its seeds as separate jobs"
            )
        for name in names:  # a bad --env is one line before anything runs
            preset_config(name, args.steps, env=args.env)
        group = args.group or args.seeds
        started = time.time()
        results = []
        print(HEADER, flush=True)
        for name in names:
            r = run_preset(name, args.seeds, args.steps, group, None, args.group_dir, args.env)
            r["budget"] = preset_config(name, env=args.env).run.steps
            if args.env:  # another game than the preset's: its own row, files and no anchor
                name = r["name"] = f"{name}-{r['cfg']['env']['name']}"
            results.append(r)
            print(table_row(r), flush=True)
            Path(args.out_dir).mkdir(parents=True, exist_ok=True)
            line = dict(
                label=name,
                seeds=list(range(len(r["finals"]))),
                step=r["steps"],
                values=r["curves"],
                final=r["finals"],
            )
            plot([line], "eval_return", Path(args.out_dir) / f"{name}.png", center="iqm")
            record = dict(
                preset=name,
                steps=r["steps"].tolist(),
                eval_curves=r["curves"].tolist(),
                finals=r["finals"].tolist(),
                first_solve_steps=r["solves"],
                aucs=r["aucs"].tolist(),
            )
            (Path(args.out_dir) / f"{name}.json").write_text(json.dumps(record))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except guards.Interrupted as e:
        print(e, file=sys.stderr)
        return e.exit_code
    load = os.getloadavg()
    command = f"python benchmarks/presets.py {' '.join(sys.argv[1:] if argv is None else argv)}"
    run = run_fields(command.strip(), started, load, args.source)
    for r in results:  # each per-member file says how it was measured
        path = Path(args.out_dir) / f"{r['name']}.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **run}))
    name = args.label or f"presets-{time.strftime('%Y-%m-%d-%H%M', time.gmtime(started))}"
    record_run(Path(args.data), name, run, [data_row(r, name, args.out_dir) for r in results])
    print(f"recorded in {args.data} (run '{name}'); python benchmarks/tables.py writes the tables")
    if args.results:
        section = (
            f"\n### presets.py {args.label}\n\n`{command}` on {run['date']}, jax "
            f"{jax.__version__}, {jax.default_backend()}, {run['load']}; final returns over "
            f"{results[0]['episodes']} greedy episodes per member; plots in "
            f"`{args.out_dir}/`.\n\n{HEADER}\n" + "\n".join(table_row(r) for r in results) + "\n"
        )
        with open(args.results, "a") as f:
            f.write(section)
    return 0


def run_fields(command: str, started: float, load: tuple, source: str) -> dict[str, str]:
    """How a run was measured: machine, date, load, command, commit and journal source, as
    ``benchmarks/data``'s runs record it."""
    import platform
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=7"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "not recorded (no git)"
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    machine = (
        f"{os.cpu_count()}-core {platform.machine()} machine ({memory:.0f} GB RAM, jax backend "
        f"{jax.default_backend()}), Python {platform.python_version()}, jax {jax.__version__}"
    )
    fmt = "%Y-%m-%d, %H:%M UTC"
    date = f"{time.strftime(fmt, time.gmtime(started))} to {time.strftime(fmt, time.gmtime())}"
    return dict(
        machine=machine,
        date=date,
        load=f"load average at the end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}",
        command=command,
        commit=commit,
        source=source,
    )


def data_row(r: dict[str, Any], run: str, out_dir: str) -> dict[str, Any]:
    """One row of ``benchmarks/data/presets.yaml`` for a finished preset, in the format
    ``benchmarks/tables.py`` reads (figures rounded as its table prints them)."""
    ci = stats.interval_estimate(r["finals"])
    d = 3 if number_format(r["finals"]) == ".3f" else 1
    target = r["target"]
    solved = [s for s in r["solves"] if s is not None]
    row = dict(
        preset=r["name"],
        run=run,
        seeds=len(r["finals"]),
        env_steps=int(r["cfg"]["run"]["steps"]),
        final_iqm=round(float(ci.point), d),
        final_ci=[round(float(ci.lower), d), round(float(ci.upper), d)],
        auc_iqm=round(float(stats.iqm(r["aucs"])), d),
        compile_s=round(float(r["compile"])),
        wall_s=round(float(r["wall"])),
        members=os.path.relpath(Path(out_dir) / f"{r['name']}.json", Path(__file__).parents[1]),
        anchor=ANCHORS.get(r["name"], "-"),
    )
    if r.get("budget", 0) > row["env_steps"]:
        row["budget"] = f"{r['budget']:,}"  # the preset's own budget, cut by --steps
    if target is not None:
        row["target"] = target
        row["at_target"] = int(np.sum(np.asarray(r["finals"]) >= target))
        row["first_solve"] = [float(np.median(solved)) if solved else 0, len(solved)]
    return row


def record_run(path: Path, run: str, fields: dict[str, str], rows: list[dict[str, Any]]) -> None:
    """Records a run and its rows in the data file at ``path``, editing its text so that its
    comments and layout stay: the run is added under ``runs:``, each row replaces the row
    of the same preset (or is added at the end of ``rows:``)."""
    import re

    import yaml

    text = path.read_text()
    block = yaml.safe_dump({run: fields}, allow_unicode=True, sort_keys=False, width=1000)
    block = "".join(f"  {line}\n" for line in block.splitlines())
    if re.search(rf"^  {re.escape(run)}:$", text, re.M):
        raise ConfigError(f"run '{run}' is already in {path}; give another --label")
    text = re.sub(r"^rows:$", lambda m: block + m.group(0), text, count=1, flags=re.M)
    for row in rows:
        text = re.sub(
            rf"^  - \{{preset: {re.escape(row['preset'])},.*?(?=^  - \{{|\Z)",
            "",
            text,
            flags=re.M | re.S,
        )
        line = yaml.safe_dump(
            row, default_flow_style=True, allow_unicode=True, sort_keys=False, width=10**6
        )
        text = text.rstrip("\n") + "\n  - " + line
    path.write_text(text)
    yaml.safe_load(path.read_text())  # still YAML


if __name__ == "__main__":
    sys.exit(main())
