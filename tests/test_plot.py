"""``python -m jaxrl.plot``: what is drawn (the IQM per step and its stratified-bootstrap
band against slow references, the mean with ``--stat mean``, no band and "1 run, no
interval" for one run, legend labels of the options that tell lines apart), grouping of
seeds (across run directories and within a seeds/sweep run) into lines, the
final-performance table, and the options: interpolation of runs logged at different steps
against a hand computation, smoothing against NumPy references, the x axes, names and
colour maps, and mistakes (one line, exit 2, no image)."""

import json

import numpy as np
import pytest
import yaml

from jaxrl.plot import (
    draw,
    group_curves,
    line_colors,
    load_curves,
    main,
    parse_smooth,
    short_labels,
    smooth,
)
from tests import references
from tests.helpers import one_line_error


def write_run(path, seed, rows, lr=1e-3, agent=None):
    path.mkdir(parents=True)
    cfg = {
        "agent": {"name": "dqn", "lr": lr, **(agent or {})},
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
    assert sorted(by_label) == ["lr=0.001", "lr=0.01"]
    # The sweep's lr 1e-3 member seeds join the single runs of lr 1e-3 (same options).
    assert by_label["lr=0.001"]["seeds"] == [0, 1, 2, 10, 11]
    np.testing.assert_array_equal(by_label["lr=0.01"]["values"], [[110.0] * 3, [111.0] * 3])
    out = tmp_path / "curves.png"
    assert main([*dirs, "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    # Finals at lr 1e-3: 30, 31, 32, 20, 21 -> IQM of [20, 21, 30, 31, 32] is 82 / 3.
    line = next(li for li in text.splitlines() if "lr=0.001" in li)
    low, high = references.bootstrap_iqm_interval([30, 31, 32, 20, 21], reps=50_000)
    assert "5 runs" in line and f"IQM 27.3 [{low:.1f}, {high:.1f}]" in line
    assert "mean" not in line  # the table gives the statistic drawn
    assert "options that differ between the lines: agent.lr" in text


def test_mistakes_exit_2(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    write_run(tmp_path / "run", 0, [{"step": 1, "episode_return": 1.0}])
    assert main([str(tmp_path / "run"), "--metric", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "has no metric 'nope'; it has: step, episode_return" in err
    write_run(tmp_path / "started", 0, [])  # a run before its first chunk's end
    out = tmp_path / "started.png"
    assert main([str(tmp_path / "started"), "--out", str(out)]) == 2 and not out.exists()
    one_line_error(capsys, "has no metric rows yet (its metrics.jsonl is empty")


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
    assert [li["label"] for li in group_curves(curves)] == ["lr=0.1", "lr=0.2"]
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


def drawn(lines, stat="iqm"):
    """What ``draw`` put on the axes: per line its x and y data and its band's y values at
    each x, the legend's labels and the title."""
    import matplotlib.pyplot as plt

    fig = draw(lines, "episode_return", stat)
    (ax,) = fig.axes
    bands = [c.get_paths()[0].vertices for c in ax.collections]
    out = (
        [(li.get_xdata(), li.get_ydata()) for li in ax.lines],
        bands,
        [t.get_text() for t in ax.get_legend().get_texts()],
        ax.get_title(),
    )
    plt.close(fig)
    return out


def test_drawn_line_is_the_iqm_per_step_with_its_stratified_bootstrap_band(tmp_path):
    # Five seeds, one far above the others at every step: the IQM drops it, the mean not.
    finals = [[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 3.0, 4.0], [2.5, 1.0, 6.0], [90, 95, 99]]
    for seed, values in enumerate(finals):
        rows = [{"step": 10 * (t + 1), "episode_return": v} for t, v in enumerate(values)]
        write_run(tmp_path / f"run{seed}", seed, rows)
    lines = group_curves(load_curves(sorted(tmp_path.iterdir()), "episode_return"))
    (xy,), (band,), legend, title = drawn(lines)
    values = np.asarray(finals)
    np.testing.assert_array_equal(xy[0], [10, 20, 30])
    np.testing.assert_allclose(xy[1], [references.iqm(values[:, t]) for t in range(3)])
    # The band: at each step the 2.5th and 97.5th percentiles of the IQM of 2,000
    # resamples of whole runs (draws of ``jaxrl.stats.curve_interval``), one at a time.
    rows = np.random.default_rng(0).integers(0, 5, size=(2000, 5))
    for t, x in enumerate((10, 20, 30)):
        resampled = [references.iqm(values[r, t]) for r in rows]
        at_x = band[band[:, 0] == x, 1]
        assert references.percentile(resampled, 2.5) == pytest.approx(at_x.min())
        assert references.percentile(resampled, 97.5) == pytest.approx(at_x.max())
    assert legend == ["dqn on CartPole-v1 (5 runs)"]
    assert title == "IQM over runs (seeds), 95% stratified-bootstrap CI"
    (xy,), _, _, title = drawn(lines, "mean")
    np.testing.assert_allclose(xy[1], values.mean(axis=0))
    assert title.startswith("mean over runs")


def test_one_run_is_drawn_without_a_band_and_says_so(tmp_path, capsys):
    write_run(tmp_path / "run", 0, [{"step": s, "episode_return": 2.0 * s} for s in (1, 2)])
    lines = group_curves(load_curves([tmp_path / "run"], "episode_return"))
    (xy,), bands, legend, title = drawn(lines)
    np.testing.assert_array_equal(xy[1], [2.0, 4.0])
    assert bands == [] and legend == ["dqn on CartPole-v1 (1 run, no interval)"]
    assert title == "1 run, no interval" and "95%" not in title
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "c.png")]) == 0
    (row,) = [li for li in capsys.readouterr().out.splitlines() if "CartPole" in li]
    assert "IQM 4.0  (1 run, no interval)" in row and "[" not in row


def test_legend_names_only_the_options_that_tell_the_lines_apart(tmp_path, capsys):
    # Two configs that differ in 18 options: the learning rate (swept) and 17 others.
    others = {f"option_{i:02d}": i for i in range(17)}
    for lr in (1e-3, 3e-4):
        rows = [{"step": s, "episode_return": 1.0, "seed": 0, "agent.lr": lr} for s in (1, 2)]
        options = {k: v * (lr == 1e-3) for k, v in others.items()}
        write_run(tmp_path / f"lr{lr}", 0, rows, lr=lr, agent=options)
    # A PPO run: its own options go with its name.
    write_run(
        tmp_path / "ppo", 0, [{"step": 1, "episode_return": 1.0}], agent={"name": "ppo", "clip": 1}
    )
    dirs = sorted(tmp_path.iterdir())
    lines = group_curves(load_curves(dirs[:2], "episode_return"))
    assert [li["label"] for li in lines] == ["lr=3e-4", "lr=0.001"]  # by value
    assert drawn(lines)[2] == ["lr=3e-4 (1 run, no interval)", "lr=0.001 (1 run, no interval)"]
    lines = group_curves(load_curves([dirs[0], dirs[2]], "episode_return"))
    assert [li["label"] for li in lines] == ["dqn", "ppo"]
    assert main([*map(str, dirs[:2]), "--out", str(tmp_path / "c.png")]) == 0
    differ = capsys.readouterr().out.splitlines()[-2]
    assert differ.startswith("options that differ between the lines: agent.lr, agent.option_01")
    assert differ.count("agent.") == 17  # option_00 is 0 in both
    # An option one line lacks tells lines apart only when nothing else does.
    dqn, ppo = {"agent.name": "dqn"}, {"agent.name": "ppo", "agent.clip": 1}
    assert short_labels([{**dqn, "agent.x": 1}, dqn, ppo]) == ["dqn, x=1", "dqn", "ppo"]
