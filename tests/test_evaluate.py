"""``python -m jaxrl.evaluate``: the printed statistics are those of the restored policy's
episodes, --epsilon changes the policy, --video writes the episode's frames, and a
missing run is a one-line error with exit code 2."""

import jax
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.checkpoint import restore
from jaxrl.envs.render import HEIGHT, PALETTE, WIDTH, observation_frame, render, renderable
from jaxrl.evaluate import main as evaluate
from jaxrl.experiment.checkpoint import checkpoint_steps
from jaxrl.runners import make_evaluate
from tests.helpers import one_line_error, tiny_run

# The run the tests evaluate (the ``trained_run`` fixture): the tiny DQN, wider, 1024 steps,
# no evaluation while it trains.
TRAINED_RUN = tiny_run(
    "--steps 1024 --agent.hidden_sizes [16] --agent.batch_size 16 --agent.learning_starts 128"
    " --agent.epsilon_decay_steps 512 --agent.updates_per_rollout 4 --run.rollout_len 8"
    " --run.log_every 512 --run.eval_every 0"
)


def stats(text):
    line = next(li for li in text.splitlines() if "return mean" in li).split()
    return {line[i]: float(line[i + 1]) for i in range(len(line) - 1) if line[i] in
            ("mean", "std", "min", "max")}  # fmt: skip


def test_printed_statistics_are_the_policys_returns(trained_run, capsys):
    assert evaluate([str(trained_run), "--episodes", "5", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    printed = stats(out)
    (step,) = checkpoint_steps(trained_run)
    assert f"checkpoint {step:,}," in out  # which checkpoint was evaluated
    agent, state, _ = restore(trained_run)
    env = envs.make("CartPole-v1", num_envs=5)
    returns = np.asarray(jax.jit(make_evaluate(agent, env))(state, jax.random.PRNGKey(3)))
    expected = dict(mean=returns.mean(), std=returns.std(), min=returns.min(), max=returns.max())
    assert printed == pytest.approx(expected, abs=0.006)
    # A fully random policy (epsilon 1) scores differently from the greedy one.
    assert evaluate([str(trained_run), "--episodes", "5", "--seed", "3", "--epsilon", "1"]) == 0
    assert stats(capsys.readouterr().out) != printed


def test_video_holds_the_episode(trained_run, tmp_path, capsys):
    import imageio.v2 as imageio

    out = tmp_path / "episode.mp4"
    assert evaluate([str(trained_run), "--video", str(out), "--episodes", "1"]) == 0
    frames = int(capsys.readouterr().out.split("(")[-1].split()[0])
    video = imageio.mimread(out, memtest=False)
    assert len(video) == frames >= 9 and video[0].shape[:2] == (HEIGHT, WIDTH)


def test_renderers_draw_the_state():
    # CartPole: the pole leans the way theta says (more pole pixels on that side).
    upright = render("CartPole-v1", np.array([0.0, 0, 0.0, 0]))
    right = render("CartPole-v1", np.array([0.0, 0, 0.2, 0]))
    pole = lambda frame: (frame == [202, 152, 101]).all(-1)
    cols = np.nonzero(pole(right))[1]
    assert cols.mean() > np.nonzero(pole(upright))[1].mean() + 5
    # The cart moves with x.
    cart = lambda frame: np.nonzero((frame == [40, 40, 40]).all(-1))[1].mean()
    assert cart(render("CartPole-v1", np.array([1.0, 0, 0, 0]))) > cart(upright) + 50
    for name in renderable():
        frame = render(name, np.zeros(4))
        assert frame.dtype == np.uint8 and frame.shape == (HEIGHT, WIDTH, 3) and frame.min() == 0


def test_observation_frames_against_numpy():
    """Pixels: the newest stacked frame, grey, each pixel 3x3; planes: each cell 24 px in
    the colour of the last plane set there, black where none is; both padded to 16."""
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (84, 84, 4), dtype=np.uint8)
    frame = observation_frame(pixels)
    assert frame.shape == (256, 256, 3) and frame.dtype == np.uint8
    np.testing.assert_array_equal(frame[1:252:3, 1:252:3], np.repeat(pixels[..., 3:], 3, -1))
    assert not frame[252:].any() and not frame[:, 252:].any()
    planes = np.zeros((3, 3, 2), np.float32)
    planes[0, 0, 0] = planes[1, 1, 1] = 1.0
    planes[2, 2] = 1.0  # both: the last plane's colour
    grid = observation_frame(planes)
    assert grid.shape == (80, 80, 3)
    centre = lambda i, j: grid[24 * i + 12, 24 * j + 12]
    np.testing.assert_array_equal(centre(0, 0), PALETTE[0])
    np.testing.assert_array_equal(centre(1, 1), PALETTE[1])
    np.testing.assert_array_equal(centre(2, 2), PALETTE[1])
    assert not centre(0, 1).any() and not grid[72:].any()


@pytest.mark.parametrize(
    "env, options",
    [
        ("MinAtar-Breakout", {}),
        ("Pong", {"max_num_frames_per_episode": 240, "noop_max": 0}),
        ("tic_tac_toe", {}),  # a board: the agent plays both sides
    ],
)
def test_video_of_an_image_family_is_its_observations(tmp_path, env, options):
    """``--video`` of MinAtar, Atari and a board game: one episode, each frame the
    observation's picture (decoded back from the file, through the lossy codec)."""
    import imageio.v2 as imageio

    from jaxrl import agents
    from jaxrl.evaluate import check_video, record
    from jaxrl.experiment.config import resolve
    from jaxrl.types import main_obs

    overrides = {f"env.{k}": v for k, v in options.items()}
    config = resolve(agent="random", env=env, overrides=overrides)
    check_video(config, 1)
    spec = config.env.make(1).spec
    agent = agents.build(config.agent, spec)
    key = jax.random.PRNGKey(0)
    path = tmp_path / "episode.mp4"
    frames = record(agent, agent.init(key), config, jax.random.PRNGKey(1), str(path))
    video = imageio.mimread(path, memtest=False)
    assert len(video) == frames > 1
    first_obs = config.env.make(1).reset(jax.random.split(jax.random.PRNGKey(1))[1])[1].obs
    want = observation_frame(np.asarray(main_obs(first_obs))[0]).astype(int)
    assert video[0].shape == want.shape
    assert np.abs(video[0].astype(int) - want).mean() < 8  # lossy codec: close, not equal


def test_missing_run_is_one_line_exit_2(tmp_path, capsys):
    assert evaluate([str(tmp_path / "nope")]) == 2
    one_line_error(capsys, "does not exist")
    assert evaluate([str(tmp_path), "--episodes", "0"]) == 2


def test_evaluate_returns_on_a_host_env_are_its_episodes():
    """Issue 55: ``jaxrl.evaluate`` of a ``gym:`` run traced the Gymnasium env into a jitted
    loop (``TypeError: Only scalar arrays can be converted``). The returns are each env's
    first greedy episode, stepped here one env at a time with Gymnasium itself."""
    import gymnasium

    from jaxrl import agents
    from jaxrl.evaluate import evaluate_returns
    from jaxrl.runners.host import _seed

    env = envs.make("gym:CartPole-v1", num_envs=2, max_episode_steps=40)
    agent = agents.make("dqn", env.spec, hidden_sizes=(8,))
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    key = jax.random.PRNGKey(1)
    returns = evaluate_returns(agent, state, env, key, batched=False)
    seed = _seed(jax.random.split(key)[1])  # HostEnv.reset seeds copy i with seed + i
    expected = []
    for i in range(2):
        one = gymnasium.make("CartPole-v1", max_episode_steps=40)
        obs, _ = one.reset(seed=seed + i)
        total, done = 0.0, False
        while not done:
            action, _, _ = agent.act(state, obs[None], agent.init_carry(1), key, False)
            obs, reward, terminated, truncated, _ = one.step(int(action[0]))
            total, done = total + reward, terminated or truncated
        expected.append(total)
    np.testing.assert_array_equal(returns, expected)


@pytest.mark.parametrize(
    "env, video, fragment",
    [
        ("FrozenLake-v1", "{tmp}/v.mp4", "--video: env 'FrozenLake-v1' does not render"),
        ("CartPole-v1", "{tmp}/missing/v.mp4", "--video: folder '{tmp}/missing' does not exist"),
    ],
)
def test_video_is_checked_before_anything_is_restored(tmp_path, capsys, env, video, fragment):
    """Issue 55: ``--video`` on an env that does not render failed after the whole
    evaluation; it is refused from the run's config alone (this run has no checkpoint)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(f"agent: {{name: dqn}}\nenv: {{name: {env}}}\n")
    video = video.replace("{tmp}", str(tmp_path))
    assert evaluate([str(run), "--video", video]) == 2
    one_line_error(capsys, fragment.replace("{tmp}", str(tmp_path)))
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["config.yaml", "run"]
