"""``python -m jaxrl.plot``: IQM and the bootstrap interval against slow references,
grouping of seeds (across run directories and within a seeds/sweep run) into lines, and
the final-performance table."""

import json

import numpy as np
import pytest
import yaml

from jaxrl.plot import bootstrap_ci, group_curves, iqm, load_curves, main


def test_iqm_is_the_mean_of_the_middle_half():
    rng = np.random.default_rng(0)
    for n in (1, 4, 5, 8, 10):
        x = rng.normal(size=n)
        cut = int(0.25 * n)  # scipy.stats.trim_mean(x, 0.25)
        assert iqm(x) == pytest.approx(np.sort(x)[cut : n - cut].mean())
    assert iqm(np.array([100.0, 1, 2, 3, 4, 5, 6, -100])) == pytest.approx(3.5)


def test_bootstrap_matches_a_loop():
    values = np.random.default_rng(1).normal(size=(6, 3))
    low, high = bootstrap_ci(values, samples=500, seed=7)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 6, size=(500, 6))
    means = np.array([[values[i, t].mean() for t in range(3)] for i in idx])
    np.testing.assert_allclose(low, np.percentile(means, 2.5, axis=0))
    np.testing.assert_allclose(high, np.percentile(means, 97.5, axis=0))
    assert (low <= values.mean(0)).all() and (values.mean(0) <= high).all()
    same = bootstrap_ci(np.ones((4, 2)))
    np.testing.assert_array_equal(same[0], same[1])


def write_run(path, seed, rows, lr=1e-3):
    path.mkdir(parents=True)
    cfg = {
        "agent": {"name": "dqn", "lr": lr},
        "env": {"name": "CartPole-v1"},
        "run": {"seed": seed},
    }
    (path / "config.yaml").write_text(yaml.safe_dump(cfg))
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_lines_and_table(tmp_path, capsys):
    # Three single-seed runs at lr 1e-3 and one sweep run (2 lrs x 2 seeds).
    for seed in range(3):
        rows = [{"step": s, "episode_return": 10.0 * s + seed, "time": 1.0} for s in (1, 2, 3)]
        write_run(tmp_path / f"single{seed}", seed, rows)
    sweep_rows = [
        {"step": s, "episode_return": lr * 1e4 + seed, "seed": seed, "agent.lr": lr}
        for s in (1, 2, 3)
        for lr in (1e-3, 1e-2)
        for seed in (10, 11)
    ]
    write_run(tmp_path / "sweep", 10, sweep_rows, lr=5e-4)
    dirs = sorted(str(p) for p in tmp_path.iterdir())
    lines = group_curves(load_curves(dirs, "episode_return"))
    by_label = {line["label"]: line for line in lines}
    assert sorted(by_label) == ["agent.lr=0.001", "agent.lr=0.01"]
    # The sweep's lr 1e-3 member seeds join the single runs of lr 1e-3 (same options).
    assert by_label["agent.lr=0.001"]["seeds"] == [0, 1, 2, 10, 11]
    np.testing.assert_array_equal(by_label["agent.lr=0.01"]["values"], [[110.0] * 3, [111.0] * 3])
    out = tmp_path / "curves.png"
    assert main([*dirs, "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    # Finals at lr 1e-3: 30, 31, 32, 20, 21 -> IQM of [20, 21, 30, 31, 32] is 82 / 3.
    line = next(li for li in text.splitlines() if "agent.lr=0.001" in li)
    assert "5 runs" in line and "IQM 27.3" in line and "mean 26.8" in line


def test_mistakes_exit_2(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    write_run(tmp_path / "run", 0, [{"step": 1, "episode_return": 1.0}])
    assert main([str(tmp_path / "run"), "--metric", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "has no metric 'nope'; it has: step, episode_return" in err
