"""``PeriodicExport`` (``--callback export:every=N``) on its own: a policy file at the
first chunk end past each multiple of ``every`` (and nowhere else), one per member of a
seed run, each the greedy policy of the state it was handed."""

import types

import jax
import numpy as np

from jaxrl import agents, envs
from jaxrl.experiment.callbacks import Event, resolve
from jaxrl.experiment.setup import Policy
from jaxrl.export.callback import PeriodicExport


def fake_setup(agent, spec, members):
    return types.SimpleNamespace(
        agent=agent,
        policies=lambda agent_state: [Policy("", agent, agent_state)],
        env=types.SimpleNamespace(spec=spec),
        config=types.SimpleNamespace(trained=(types.SimpleNamespace(name="dqn"),)),
        members=[{"seed": i} for i in range(members)],
        launch=types.SimpleNamespace(batched=members > 1),
        runner=types.SimpleNamespace(layout=types.SimpleNamespace(steps_per_chunk=256)),
    )


def test_exports_at_the_chunk_ends_past_each_multiple(tmp_path):
    spec = envs.make("CartPole-v1", num_envs=1).spec
    agent = agents.make("dqn", spec, hidden_sizes=(8,), buffer_size=16, batch_size=4)
    states = [jax.jit(agent.init)(jax.random.PRNGKey(i)) for i in range(2)]
    export = resolve("export:every=600,format=stablehlo")
    assert isinstance(export, PeriodicExport)
    single = fake_setup(agent, spec, 1)
    for chunk, step in enumerate(range(256, 1537, 256), start=1):
        state = types.SimpleNamespace(agent_state=states[chunk % 2])
        export.on_chunk(Event(step, chunk, 1536, [], state, tmp_path, single))
    # Multiples of 600 fall in the chunks ending at 768 (600) and 1280 (1200).
    names = sorted(p.name for p in (tmp_path / "export").iterdir())
    assert names == ["policy_1280.stablehlo", "policy_768.stablehlo"]
    obs = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    exported = jax.export.deserialize((tmp_path / "export/policy_768.stablehlo").read_bytes())
    carry = agent.init_carry(32)
    want, _, _ = agent.act(states[3 % 2], obs, carry, jax.random.PRNGKey(0), False)
    np.testing.assert_array_equal(exported.call(obs)[0], want)  # chunk 3's state
    # A seed run: one file per member, member i from member i.
    stacked = jax.tree.map(lambda a, b: np.stack([a, b]), *states)
    event = Event(
        512,
        2,
        512,
        [],
        types.SimpleNamespace(agent_state=stacked),
        tmp_path,
        fake_setup(agent, spec, 2),
    )
    paths = PeriodicExport(every=512, format="stablehlo").export(event)
    assert [p.name for p in paths] == ["policy_512_m0.stablehlo", "policy_512_m1.stablehlo"]
