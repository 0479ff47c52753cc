"""``jaxrl tune`` (issue 56 part 2): a space's values turned into options, trials grouped
into programs by shape, and one tiny study on CartPole that runs a batch as one vmapped
program, resumes after an interruption (the interrupted trial failed and asked again),
prunes by the median rule, and writes a config that ``--config`` trains to the best
trial's return."""

import math

import numpy as np
import optuna
import pytest
import yaml

from jaxrl.tune import space, trials
from jaxrl.tune.__main__ import main
from tests.helpers import tiny_run, train_run

# The tiny DQN of the CLI tests, with a searched learning rate and final epsilon.
TINY = tiny_run("--steps 768 --agent.buffer_size 256 --agent.target_update_period 64")
TINY = [t for t in TINY if t not in ("--agent", "dqn", "--env", "CartPole")]
SPACE = "agent.lr: {low: 1.0e-4, high: 0.3, log: true}\nagent.epsilon_end: {low: 0.01, high: 0.2}\n"


def test_values_follow_the_space():
    """Each kind of entry against the option value it must give, for a fixed trial."""
    params = [
        space.parse(
            "t", "agent.gamma", {"low": 1e-4, "high": 0.03, "log": True, "one_minus": True}
        ),
        space.parse("t", "run.rollout_len", {"choices": [32, 64]}),
        space.parse(
            "t",
            "agent.num_minibatches",
            {"choices": [16, 32], "quotient_of": ["run.rollout_len", "env.num_envs"]},
        ),  # noqa: E501
        space.parse("t", "agent.epsilon_decay_steps", {"low": 0.0, "high": 0.5, "of_steps": True}),
        space.parse("t", "agent.actor_lr", {"low": 1e-5, "high": 1.0, "also": ["agent.critic_lr"]}),
        space.parse("t", "agent.hidden_sizes", {"choices": [[64], [64, 64]]}),
    ]
    raw = {
        "agent.gamma": 0.01,
        "run.rollout_len": 64,
        "agent.num_minibatches": 32,
        "agent.epsilon_decay_steps": 0.25,
        "agent.actor_lr": 3e-4,
        "agent.hidden_sizes": "[64, 64]",
    }
    base = {"run.steps": 10_000, "env.num_envs": 4, "run.rollout_len": 128}
    got = trials.suggest(optuna.trial.FixedTrial(raw), params, base)
    assert got == {
        "agent.gamma": 1 - 0.01,
        "run.rollout_len": 64,
        "agent.num_minibatches": 64 * 4 // 32,  # the sampled rollout, not the base one
        "agent.epsilon_decay_steps": 2_500,
        "agent.actor_lr": 3e-4,
        "agent.critic_lr": 3e-4,
        "agent.hidden_sizes": [64, 64],
    }


def test_trials_group_into_programs_by_shape():
    continuous = {"agent.lr", "agent.gamma"}
    chosen = [
        {"agent.lr": 1e-3, "agent.hidden_sizes": [64]},
        {"agent.lr": 3e-4, "agent.hidden_sizes": [64, 64]},
        {"agent.lr": 1e-2, "agent.hidden_sizes": [64]},
        {"agent.lr": 1e-4, "agent.hidden_sizes": [64, 64]},
        {"agent.lr": 2e-4, "agent.hidden_sizes": [64]},
    ]

    def reference(chosen):  # indices with equal non-continuous options, first seen first
        shapes = []
        for o in chosen:
            shape = {k: v for k, v in o.items() if k not in continuous}
            if shape not in shapes:
                shapes.append(shape)
        return [
            [
                i
                for i, o in enumerate(chosen)
                if {k: v for k, v in o.items() if k not in continuous} == s
            ]
            for s in shapes
        ]  # noqa: E501

    assert trials.groups(chosen, continuous) == reference(chosen) == [[0, 2, 4], [1, 3]]
    # No continuous option: trials of one shape are the same program, each run alone.
    assert trials.groups([{"agent.n_step": 3}] * 2, continuous) == [[0], [1]]
    lr = space.parse("t", "agent.lr", {"low": 1e-4, "high": 1e-2})
    sizes = space.parse("t", "agent.hidden_sizes", {"choices": [[8], [16]]})
    assert trials.is_continuous(lr, continuous) and not trials.is_continuous(sizes, continuous)


def _study(logdir):
    db = f"sqlite:///{logdir / 'tiny' / 'study.db'}"
    return optuna.load_study(study_name="tiny", storage=db)


def test_a_study_resumes_prunes_and_writes_a_config_that_trains(tmp_path, capsys):
    (tmp_path / "space.yaml").write_text(SPACE)
    command = [*TINY, "--space", str(tmp_path / "space.yaml"), "--study-name", "tiny"]
    command += ["--logdir", str(tmp_path / "tunes"), "--batch", "6"]
    assert main([*command, "--trials", "6"]) == 0
    study = _study(tmp_path / "tunes")
    first = study.get_trials()
    assert [t.state.name for t in first] == ["COMPLETE"] * 6
    assert len({t.user_attrs["run_dir"] for t in first}) == 1  # one vmapped program

    # A process stopped mid-batch leaves its trial RUNNING (asked, never told).
    stopped = study.ask()
    trials.suggest(stopped, space.load(str(tmp_path / "space.yaml"), "dqn"), {})
    assert main([*command, "--trials", "12"]) == 0
    out = capsys.readouterr().out
    assert f"trial {stopped.number} was interrupted: marked failed" in out
    done = _study(tmp_path / "tunes").get_trials()
    failed = [t for t in done if t.state.name == "FAIL"]
    assert [t.number for t in failed] == [stopped.number] and failed[0].user_attrs["interrupted"]
    (retry,) = [t for t in done if t.user_attrs.get("retry_of") == stopped.number]
    assert retry.params == stopped.params  # asked again, with the same parameters
    assert sum(t.state.name in ("COMPLETE", "PRUNED") for t in done) == 12

    # Median pruning: a pruned trial's last report is below the median of the completed
    # trials' reports at that step (optuna.pruners.MedianPruner after 5 trials, from a
    # third of the run).
    pruned = [t for t in done if t.state.name == "PRUNED"]
    assert pruned
    for t in pruned:
        step, value = max(t.intermediate_values.items())
        assert step >= 768 // 3
        others = [
            c.intermediate_values[step]
            for c in done
            if c.state.name == "COMPLETE" and c.number < t.number
        ]  # noqa: E501
        assert value < np.median(others)

    # best.yaml trains, with --config, to the best trial's options and final return.
    best = _study(tmp_path / "tunes").best_trial
    path = tmp_path / "tunes" / "tiny" / "best.yaml"
    assert f"trial {best.number}, final evaluation return" in path.read_text()
    run = train_run(tmp_path / "runs", "--config", str(path), "--log", "")
    config = yaml.safe_load((run / "config.yaml").read_text())
    for name, value in best.user_attrs["overrides"].items():
        section, _, key = name.partition(".")
        assert config[section][key] == value
    final = yaml.safe_load((run / "summary.yaml").read_text())["final_eval_return"]
    assert math.isclose(final, best.value, rel_tol=1e-6)


def test_a_study_started_by_another_command_is_refused(tmp_path, capsys):
    """The database holds study 'tiny' for one space; the same name with another agent
    is one line and exit code 2, and the study is unchanged."""
    db = tmp_path / "s.db"
    study = optuna.create_study(study_name="tiny", storage=f"sqlite:///{db}")
    study.set_user_attr("command", {"agent": "ppo"})
    before = db.read_bytes()
    args = ["--study-name", "tiny", "--storage", f"sqlite:///{db}", "--logdir", str(tmp_path)]
    assert main([*args, "--space", "builtin-continuous", "--trials", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "study 'tiny' was started with agent = 'ppo'" in err
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


@pytest.mark.parametrize("spec", ["builtin", "builtin-continuous"])
@pytest.mark.parametrize("agent", space.builtin_names())
def test_builtin_spaces_name_valid_options(agent, spec):
    """Every bound and choice of each built-in space is a valid option value of the agent
    on its preset's env (the check ``jaxrl tune`` makes before anything is written)."""
    from jaxrl.tune.__main__ import Search, parse_args

    env = "Pendulum" if agent in ("sac", "td3") else "CartPole"
    search = Search(*parse_args(["--agent", agent, "--env", env, "--space", spec]))
    assert search.params
    if spec == "builtin-continuous":
        assert all(trials.is_continuous(p, search.continuous) for p in search.params)


def test_ctrl_c_leaves_the_batch_to_be_asked_again(tmp_path, capsys, monkeypatch):
    """SIGINT in a program (``guards.Interrupted`` from ``run_experiment``): exit code 130,
    the batch's trials left running; the same command then fails them and trains their
    parameters again. The programs are stood in for (no compile): the first is stopped,
    the others return each member's ``agent.lr`` as its final return."""
    import signal
    import types

    from jaxrl.experiment import guards

    def stopped(config, logdir, console, launch):
        raise guards.Interrupted("stopped by SIGINT at step 256 of 1,024", signal.SIGINT)

    def finished(config, logdir, console, launch):
        return types.SimpleNamespace(final_eval_returns=launch.sweep["lr"], run_dir=logdir)

    (tmp_path / "space.yaml").write_text(SPACE)
    command = [*TINY, "--space", str(tmp_path / "space.yaml"), "--study-name", "tiny"]
    command += ["--logdir", str(tmp_path / "tunes"), "--batch", "3", "--trials", "3"]
    monkeypatch.setattr(trials, "run_experiment", stopped)
    assert main(command) == 130
    assert "the same jaxrl tune command resumes the study" in capsys.readouterr().err
    asked = _study(tmp_path / "tunes").get_trials()
    assert [t.state.name for t in asked] == ["RUNNING"] * 3
    monkeypatch.setattr(trials, "run_experiment", finished)
    assert main(command) == 0
    done = _study(tmp_path / "tunes").get_trials()
    assert [t.state.name for t in done] == ["FAIL"] * 3 + ["COMPLETE"] * 3
    for old, new in zip(done[:3], done[3:], strict=True):
        assert new.user_attrs["retry_of"] == old.number and new.params == old.params
        assert new.value == new.params["agent.lr"]


def test_a_diverging_member_costs_the_others_time_only(tmp_path, monkeypatch):
    """A program with a member whose training diverges (``guards.NonFinite``) is split in
    halves and run again until the diverging trial runs alone, which is told pruned; the
    others complete with their own returns. Programs are stood in for: one diverges when
    any member's ``lr`` is above 0.05, else returns each member's ``lr``."""
    import types

    from jaxrl.experiment import guards

    programs = []

    def program(config, logdir, console, launch):
        lrs = launch.sweep["lr"]
        programs.append(len(lrs))
        if max(lrs) > 0.05:
            raise guards.NonFinite("non-finite loss = nan at step 512")
        return types.SimpleNamespace(final_eval_returns=lrs, run_dir=logdir)

    (tmp_path / "space.yaml").write_text(SPACE)
    command = [*TINY, "--space", str(tmp_path / "space.yaml"), "--study-name", "tiny"]
    command += ["--logdir", str(tmp_path / "tunes"), "--batch", "8", "--trials", "8"]
    monkeypatch.setattr(trials, "run_experiment", program)
    assert main(command) == 0
    done = _study(tmp_path / "tunes").get_trials()
    for t in done:
        if t.params["agent.lr"] > 0.05:
            assert t.state.name == "PRUNED" and "non-finite" in t.user_attrs["diverged"]
        else:
            assert t.state.name == "COMPLETE" and t.value == t.params["agent.lr"]
    diverging = sum(t.params["agent.lr"] > 0.05 for t in done)
    assert 0 < diverging < 8  # the space's bounds make both kinds likely; seed 0 has both
    assert programs[0] == 8 and sum(n == 1 for n in programs) >= diverging


def test_the_best_config_is_a_preset_whose_schedules_follow_steps(tmp_path):
    """``best.yaml``'s form: the preset's options with the trial's, nothing derived pinned
    (PPO's ``total_steps`` follows ``--steps`` when the file is trained longer)."""
    from jaxrl.experiment.config import load_preset, resolve
    from jaxrl.tune.__main__ import Search, parse_args

    argv = ["--agent", "ppo", "--env", "CartPole", "--space", "builtin-continuous"]
    search = Search(*parse_args([*argv, "--steps", "20480", "--agent.update_epochs", "2"]))
    data = search.preset_form({"agent.lr": 1e-3})
    preset = load_preset("cartpole-ppo")
    assert data["agent"] == {**preset["agent"], "lr": 1e-3, "update_epochs": 2}
    assert data["run"] == {**preset["run"], "steps": 20480, "seed": 0}
    path = tmp_path / "best.yaml"
    path.write_text(yaml.safe_dump(data))
    assert resolve(config_file=str(path)).agent.option("total_steps") == 20480
    longer = resolve(config_file=str(path), steps=40960)
    assert longer.agent.option("total_steps") == 40960 and longer.agent.option("lr") == 1e-3
