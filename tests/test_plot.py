"""``python -m jaxrl.plot``: IQM and the bootstrap interval against slow references,
grouping of seeds (across run directories and within a seeds/sweep run) into lines, the
final-performance table, and the options: interpolation of runs logged at different steps
against a hand computation, smoothing against NumPy references, the x axes, names and
colour maps, and mistakes (one line, exit 2, no image)."""

import json

import numpy as np
import pytest
import yaml

from jaxrl.plot import (
    bootstrap_ci,
    group_curves,
    iqm,
    line_colors,
    load_curves,
    main,
    parse_smooth,
    smooth,
)
from tests.helpers import one_line_error


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


def test_runs_at_different_steps_are_interpolated_onto_one_grid(tmp_path):
    write_run(
        tmp_path / "a",
        0,
        [{"step": s, "episode_return": v} for s, v in ((0, 0.0), (10, 1.0), (20, 4.0))],
    )
    write_run(
        tmp_path / "b",
        1,
        [{"step": s, "episode_return": v} for s, v in ((5, 2.0), (15, 2.0), (25, 6.0))],
    )
    curves = load_curves([tmp_path / "a", tmp_path / "b"], "episode_return")
    # By hand: the common range is [5, 20]; every logged x in it is 5, 10, 15, 20.
    # a at 5: 0.5, at 15: 2.5; b at 10: 2, at 20: 2 + (6 - 2) / 2 = 4.
    (line,) = group_curves(curves)
    np.testing.assert_array_equal(line["step"], [5, 10, 15, 20])
    np.testing.assert_allclose(line["values"], [[0.5, 1.0, 2.5, 4.0], [2.0, 2.0, 2.0, 4.0]])
    np.testing.assert_array_equal(line["final"], [4.0, 6.0])  # the raw last values
    # --points 3: 5, 12.5, 20; a at 12.5: 1 + 3 * 2.5 / 10 = 1.75.
    (line,) = group_curves(curves, points=3)
    np.testing.assert_array_equal(line["step"], [5, 12.5, 20])
    np.testing.assert_allclose(line["values"], [[0.5, 1.75, 4.0], [2.0, 2.0, 4.0]])


def test_smoothing_matches_numpy_references():
    x = np.random.default_rng(2).normal(size=12)
    x[[3, 7]] = np.nan  # skipped: NaN stay NaN, the others are smoothed over the finite
    finite = x[np.isfinite(x)]
    a = 0.9
    t = np.arange(finite.size)
    # s_t = a^t x_0 + (1 - a) sum_{1 <= i <= t} a^(t - i) x_i
    ema = np.array(
        [
            a**k * finite[0] + (1 - a) * sum(a ** (k - i) * finite[i] for i in range(1, k + 1))
            for k in t
        ]
    )
    got = smooth(x, parse_smooth("ema:0.9"))
    assert np.isnan(got[[3, 7]]).all()
    np.testing.assert_allclose(got[np.isfinite(x)], ema)
    window = np.array([finite[max(0, k - 3) : k + 1].mean() for k in t])
    np.testing.assert_allclose(smooth(x, parse_smooth("window:4"))[np.isfinite(x)], window)
    np.testing.assert_allclose(smooth(x, parse_smooth("window:1")), x)
    assert parse_smooth("none") is None and parse_smooth(None) is None


def test_time_and_episode_axes_names_and_colours(tmp_path):
    rows = [
        {"step": 10 * i, "time": 0.5 * i, "episodes": 2, "episode_return": float(i)}
        for i in (1, 2, 3)
    ]
    write_run(tmp_path / "b", 0, rows, lr=0.1)
    write_run(tmp_path / "a", 0, rows, lr=0.2)
    (curve,) = load_curves([tmp_path / "a"], "episode_return", "time")
    np.testing.assert_array_equal(curve["step"], [0.5, 1.0, 1.5])
    (curve,) = load_curves([tmp_path / "a"], "episode_return", "episodes")
    np.testing.assert_array_equal(curve["step"], [2, 4, 6])  # running sum of episodes
    # Names follow the order the run directories are given, not the labels' order.
    curves = load_curves([tmp_path / "b", tmp_path / "a"], "episode_return")
    assert [li["label"] for li in group_curves(curves)] == ["agent.lr=0.1", "agent.lr=0.2"]
    named = group_curves(
        load_curves([tmp_path / "a", tmp_path / "b"], "episode_return"), names=["A", "B"]
    )
    assert [(li["label"], li["order"]) for li in named] == [("A", 0), ("B", 1)]
    import matplotlib

    tab10 = matplotlib.colormaps["tab10"]
    assert line_colors("tab10", 11) == [tab10(i % 10) for i in range(11)]
    assert line_colors("viridis", 3)[2] == matplotlib.colormaps["viridis"](1.0)
    out = tmp_path / "named.png"
    args = [str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]
    assert (
        main([*args, "--x", "episodes", "--smooth", "ema:0.5", "--names", "A,B", "--cmap", "tab10"])
        == 0
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--x", "walltime"], "unknown --x 'walltime'; valid: step, time, episodes"),
        (["--smooth", "ema:1.5"], "unknown --smooth 'ema:1.5'; valid: ema:A"),
        (["--smooth", "gauss:3"], "unknown --smooth 'gauss:3'"),
        (["--smooth", "window:0"], "unknown --smooth 'window:0'"),
        (["--cmap", "viridiss"], "unknown --cmap 'viridiss' (did you mean 'viridis'"),
        (["--names", "A,B"], "--names gives 2 names for 1 lines"),
        (["--points", "0"], "--points must be >= 1"),
        (["--x", "time"], "has no 'time' column for --x time"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(tmp_path, capsys, flags, message):
    write_run(tmp_path / "run", 0, [{"step": 1, "episode_return": 1.0}])
    out = tmp_path / "curves.png"
    assert main([str(tmp_path / "run"), "--out", str(out), *flags]) == 2
    one_line_error(capsys, message)
    assert not out.exists()


def test_runs_whose_config_holds_a_dict_are_grouped_by_its_value(tmp_path):
    # A torso spec is a dict option: equal specs join one line, different specs split.
    def run(name, seed, channels):
        rows = [{"step": s, "episode_return": float(s + seed)} for s in (1, 2)]
        write_run(tmp_path / name, seed, rows)
        cfg = yaml.safe_load((tmp_path / name / "config.yaml").read_text())
        cfg["agent"]["torso"] = {"channels": channels, "strides": [2, 2]}
        (tmp_path / name / "config.yaml").write_text(yaml.safe_dump(cfg))

    run("a0", 0, [16, 32])
    run("a1", 1, [16, 32])
    run("b0", 0, [8, 8])
    lines = group_curves(load_curves(sorted(str(p) for p in tmp_path.iterdir()), "episode_return"))
    assert sorted(line["seeds"] for line in lines) == [[0], [0, 1]]
