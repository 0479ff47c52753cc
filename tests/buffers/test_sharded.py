"""The sharded prioritized replay (``buffers/sharded.py``) on 4 fake CPU devices: every
item is drawn with probability ``p_i / sum p`` over all shards (a chi-square test that the
per-shard-uniform and equal-share-per-shard samplers fail), priority updates land in
the right shard (NumPy reference), each device holds its shard, and layouts that do not
fit are one line. The 4-device program runs in a subprocess (the CPU device count is
fixed when JAX starts)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers import PriorityParams, make_prioritized_replay, make_sharded_prioritized_replay
from tests.device_script import run_script

N, SHARDS, ROWS, BATCH, BATCHES = 8, 4, 8, 256, 200  # 64 items, 51,200 draws

SCRIPT = f"""
import json, os
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh
from jaxrl.buffers import PriorityParams, make_sharded_prioritized_replay, sum_tree

N, SHARDS, ROWS, BATCH, BATCHES = {N}, {SHARDS}, {ROWS}, {BATCH}, {BATCHES}
mesh = Mesh(np.array(jax.devices()), ("replay",))
buf = make_sharded_prioritized_replay(ROWS * N, N, BATCH, 1, num_shards=SHARDS, mesh=mesh)
pp = PriorityParams(jnp.float32(1.0), jnp.float32(0.0))
example = {{"item": jnp.zeros((N,), jnp.int32)}}
batch = {{"item": jnp.arange(ROWS * N, dtype=jnp.int32).reshape(ROWS, N)}}  # row * N + env
rng = np.random.default_rng(0)
# Shard totals far apart (envs 0-1 heavy, 6-7 light), items within a shard unequal.
scale = np.repeat([8.0, 4.0, 2.0, 1.0], N // SHARDS)[None, :]
p = (rng.uniform(0.5, 3.0, (ROWS, N)) * scale).astype(np.float32)

@jax.jit
def fill(key):
    state = buf.add(buf.init(example), batch, pp)
    return buf.update_priorities(state, jnp.arange(ROWS * N), jnp.asarray(p).reshape(-1), pp)

@jax.jit
def draws(state, key):
    samples = jax.lax.map(lambda k: buf.sample(state, k), jax.random.split(key, BATCHES))
    return samples.indices, samples.probabilities, samples.experience["item"][..., 0]

state = fill(jax.random.PRNGKey(0))
indices, probs, items = jax.device_get(draws(state, jax.random.PRNGKey(1)))
nodes = state.shards.tree.nodes
per_device = sorted((s.index[0].start or 0, np.asarray(s.data).tolist())
                    for s in nodes.addressable_shards)
# Updates: a few items (one out of range, one negative) get new priorities.
upd_idx = np.array([3, 17, 42, 63, 0, 64, -1, 30], np.int32)
upd_val = np.array([0.25, 9.0, 1.5, 30.0, 2.0, 100.0, 100.0, 0.5], np.float32)
after = jax.jit(lambda s: buf.update_priorities(s, upd_idx, upd_val, pp))(state)
leaves = [np.asarray(sum_tree.get(jax.tree.map(lambda x: x[s], after.shards.tree),
                                  jnp.arange(ROWS * N // SHARDS))).tolist()
          for s in range(SHARDS)]
out = {{
    "p": p.tolist(), "counts": np.bincount(indices.reshape(-1), minlength=ROWS * N).tolist(),
    "probs": probs.reshape(-1).tolist(), "indices": indices.reshape(-1).tolist(),
    "items": items.reshape(-1).tolist(), "devices": len(nodes.sharding.device_set),
    "spec": list(nodes.sharding.spec), "per_device": per_device,
    "upd_idx": upd_idx.tolist(), "upd_val": upd_val.tolist(), "leaves": leaves,
    "max_priority": np.asarray(after.shards.max_priority).tolist(),
    "shard_nodes": [np.asarray(nodes[s]).tolist() for s in range(SHARDS)],
}}
try:
    three = Mesh(np.array(jax.devices()[:3]), ("r",))
    make_sharded_prioritized_replay(64, N, 4, num_shards=4, mesh=three)
except ValueError as e:
    out["bad_mesh"] = str(e)
from jaxrl.train import main as train
logdir = os.path.join(os.environ["OUT_DIR"], "runs")
from tests.helpers import tiny_run
tiny = tiny_run("--agent apex_dqn --num-envs 8 --steps 512 --agent.hidden_sizes [16]"
                " --agent.batch_size 16 --agent.num_actors 2 --log ''") + ["--logdir", logdir]
out["bad_cli"] = train([*tiny, "--agent.replay_shards", "2", "--devices", "4"])
out["bad_cli_written"] = os.path.exists(logdir) and os.listdir(logdir)
from jaxrl import agents, envs
from jaxrl.runners import RunConfig, make_runner
from jaxrl.runners.distributed.devices import data_parallel, env_mesh
env = envs.make("CartPole", num_envs=N)
agent = agents.make("apex_dqn", env.spec, hidden_sizes=[16], batch_size=16, learning_starts=32,
                    num_actors=2, replay_shards=4, buffer_size=256)
runner = data_parallel(make_runner(agent, env, RunConfig(steps=256, rollout_len=4,
                       log_every=128, eval_every=0)), env_mesh(4, N), N)
run_state, _ = jax.jit(runner.run_chunk)(jax.jit(runner.init)(jax.random.PRNGKey(0)))
replay_nodes = run_state.agent_state.buffer.shards.tree.nodes
out["run_spec"] = list(replay_nodes.sharding.spec)
out["run_devices"] = len(replay_nodes.sharding.device_set)
out["run_items"] = int(agent.update.args[0].buffer.num_items(run_state.agent_state.buffer))
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    out, stderr = run_script(SCRIPT, tmp_path_factory.mktemp("sharded"), "four.py", devices=4)
    out["stderr"] = stderr
    return out


def chi_square_p(counts: np.ndarray, probabilities: np.ndarray) -> float:
    from scipy import stats  # here, not at collection

    expected = counts.sum() * probabilities / probabilities.sum()
    return float(stats.chisquare(counts, expected).pvalue)


def test_draws_follow_priorities_over_all_shards(four):
    p = np.asarray(four["p"], np.float64).reshape(-1)  # item row * N + env
    counts = np.asarray(four["counts"])
    assert counts.sum() == BATCH * BATCHES
    assert chi_square_p(counts, p) > 1e-3
    # The test has the power to reject the two wrong samplers.
    shard_of = (np.arange(ROWS * N) % N) // (N // SHARDS)
    totals = np.bincount(shard_of, weights=p)
    uniform_in_shard = totals[shard_of] / (ROWS * N // SHARDS)
    equal_share = p / totals[shard_of]
    assert chi_square_p(counts, uniform_in_shard) < 1e-9
    assert chi_square_p(counts, equal_share) < 1e-9


def test_sample_reports_global_probabilities_and_its_items(four):
    p = np.asarray(four["p"], np.float64).reshape(-1)
    indices = np.asarray(four["indices"])
    np.testing.assert_allclose(four["probs"], p[indices] / p.sum(), rtol=1e-5)
    np.testing.assert_array_equal(four["items"], indices)


def test_apex_replay_is_split_over_the_run_devices(four):
    assert four["run_spec"] == ["envs"] and four["run_devices"] == 4
    assert four["run_items"] == 8 * (128 // 8 - 3 + 1)  # 128 steps, 3-step windows


def test_each_device_holds_its_shard(four):
    assert four["devices"] == 4 and four["spec"] == ["replay"]
    starts = [start for start, _ in four["per_device"]]
    assert starts == [0, 1, 2, 3]
    for shard, (_, data) in enumerate(four["per_device"]):
        assert data == [four["shard_nodes"][shard]]


def test_priority_updates_land_in_their_shard(four):
    ref = np.asarray(four["p"], np.float32).copy()  # [ROWS, N]
    for i, v in zip(four["upd_idx"], four["upd_val"], strict=True):
        if 0 <= i < ROWS * N:  # out-of-range indices are ignored
            ref[i // N, i % N] = v
    per = N // SHARDS
    for s in range(SHARDS):
        expected = ref[:, s * per : (s + 1) * per].reshape(-1)  # local row * N_s + env
        np.testing.assert_array_equal(np.asarray(four["leaves"][s], np.float32), expected)
    assert four["max_priority"] == [30.0] * SHARDS  # the global maximum, in every shard


def test_layouts_that_do_not_fit_are_one_line(four):
    assert "device count divides 4" in four["bad_mesh"]
    assert four["bad_cli"] == 2 and not four["bad_cli_written"]
    assert four["stderr"].count("does not divide the replay's 2 shards") == 1
    with pytest.raises(ValueError, match=r"must be >= 1 and divide the 8 envs"):
        make_sharded_prioritized_replay(64, 8, 4, num_shards=3)


def test_one_shard_is_the_prioritized_buffer():
    """With one shard the sampler draws what ``make_prioritized_replay`` draws."""
    pp = PriorityParams(jnp.float32(0.6), jnp.float32(1e-6))
    one = make_sharded_prioritized_replay(64, 4, 16, window=2, num_shards=1)
    ref = make_prioritized_replay(64, 4, 16, window=2)
    example = {"x": jnp.zeros((4,), jnp.float32)}
    batch = {"x": jnp.arange(40, dtype=jnp.float32).reshape(10, 4)}
    idx, val = jnp.arange(0, 40, 3), jnp.linspace(0.1, 5.0, 14)

    def add_update_sample(buffer, key):  # one program per buffer, not one per op
        state = buffer.update_priorities(buffer.add(buffer.init(example), batch, pp), idx, val, pp)
        return buffer.sample(state, key), buffer.num_items(state)

    key = jax.random.PRNGKey(3)
    sa, na = jax.jit(functools.partial(add_update_sample, one))(key)
    sb, nb = jax.jit(functools.partial(add_update_sample, ref))(key)
    np.testing.assert_array_equal(sa.indices, sb.indices)
    np.testing.assert_allclose(sa.probabilities, sb.probabilities, rtol=1e-6)
    np.testing.assert_array_equal(sa.experience["x"], sb.experience["x"])
    assert int(na) == int(nb)
