"""What ``--help`` says (experiment/helptext.py): ``--agent NAME --help`` lists the agent's
own options first and the options it shares with other agents after, under their own
headings, each option on one line with a whole meaning (the first sentence of its
docstring entry, never an empty or cut-off one); ``--help`` lists the ``--run.*`` and
``--env.*`` options."""

import dataclasses
import re

import pytest

from jaxrl import agents
from jaxrl.envs.pixels import PixelOptions
from jaxrl.experiment.config import EnvConfig
from jaxrl.experiment.helptext import SHARED, agent_help, first_sentence, option_docs
from jaxrl.runners.base import RunConfig
from jaxrl.train import main

MAX_MEANING = 120  # characters of one option's meaning
CONFIGURED = [name for name in agents.available() if agents.entry(name).config is not None]


def shown(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    return capsys.readouterr().out


def options_of(text):
    """``{name: (line index, line)}`` of the option lines (``  NAME  default ...``)."""
    return {
        line.split()[0]: (i, line)
        for i, line in enumerate(text.splitlines())
        if line.startswith("  ") and not line.startswith("   ")
    }


def assert_whole_meanings(options, config, names):
    """Each option of ``names`` ends its line with its whole meaning: the first sentence of
    its docstring entry, one line of at most ``MAX_MEANING`` characters ending a sentence,
    no bracket or code span left open."""
    docs = option_docs(config)
    for name in names:
        meaning, line = docs.get(name, ""), options[name][1]
        where = f"{config.__name__}.{name}: {meaning!r}"
        assert meaning and line.endswith(" " + meaning), where
        assert len(meaning) <= MAX_MEANING and meaning.endswith("."), where
        prose = re.sub(r"``.*?``", "", meaning)  # brackets in code spans need no pair
        assert prose.count("(") == prose.count(")") and "``" not in prose, where


def test_first_sentence_ends_at_a_full_stop_outside_brackets_code_and_abbreviations():
    assert (
        first_sentence("dueling head (Wang et al. 2016). More.")
        == "dueling head (Wang et al. 2016)."
    )
    assert first_sentence("a (b. c) d. e.") == "a (b. c) d."
    assert first_sentence("``x. y`` z. w.") == "``x. y`` z."
    assert first_sentence("e.g. 1.0 is a copy. Then") == "e.g. 1.0 is a copy."
    assert first_sentence("groups of ``n / K`` envs. It") == "groups of ``n / K`` envs."
    assert first_sentence("no full stop") == "no full stop"


def test_dqn_help_lists_its_own_options_first_then_the_shared_ones_under_headings(capsys):
    text = shown(capsys, ["--agent", "dqn", "--help"])
    lines = text.splitlines()
    options = options_of(text)
    fields = [f.name for f in dataclasses.fields(agents.entry("dqn").config)]
    assert sorted(options) == sorted(fields)  # each option once
    first = min(options.values())[0]
    assert lines[first].split()[0] == "hidden_sizes"  # DQN's own, not AMP's or CURL's
    headings = [i for i, line in enumerate(lines) if line.endswith(":") and line[0] != " "]
    assert [lines[i] for i in headings] == [heading + ":" for _, heading in SHARED]
    own = {"lr", "gamma", "n_step", "double", "target_update_period", "param_noise"}
    shared = {"epsilon_start": 0, "adam_eps": 1, "lr_schedule": 1, "amp": 2, "curl_lr": 2}
    assert all(options[name][0] < headings[0] for name in own)
    for name, group in shared.items():  # under the heading of its group
        after = [h for h in headings if h < options[name][0]]
        assert len(after) == group + 1, name
    # A meaning once cut at its docstring's line end is whole.
    assert options["learning_starts"][1].endswith(
        "(RLHive's ``min_replay_history``; CleanRL: 10,000)."
    )


@pytest.mark.parametrize("name", CONFIGURED)
def test_every_option_of_every_agent_has_one_whole_line(name):
    config = agents.entry(name).config
    options = options_of(agent_help(name))
    fields = [f.name for f in dataclasses.fields(config)]
    assert sorted(options) == sorted(fields)
    assert_whole_meanings(options, config, fields)


def test_help_lists_the_run_and_env_options(capsys):
    text = shown(capsys, ["--help"])
    options = options_of(text)
    assert "run options (--run.KEY VALUE)" in text and "env options (--env.KEY VALUE)" in text
    assert_whole_meanings(options, RunConfig, [f.name for f in dataclasses.fields(RunConfig)])
    assert_whole_meanings(options, EnvConfig, ["num_envs"])
    assert_whole_meanings(options, PixelOptions, [f.name for f in dataclasses.fields(PixelOptions)])
    assert options["eval_every"][1].split()[1:3] == ["10000", "[0,"]  # default, range


def test_env_help_lists_the_envs_own_options_with_their_defaults(capsys):
    """``--env NAME --help``: the keyword options of the env's factory (what ``envs.make``
    passes it), with their defaults, then the options of every env."""
    text = shown(capsys, ["--env", "FrozenLake", "--help"])
    rows = {line.split()[0]: line.split()[1] for line in text.splitlines() if line[:2] == "  "}
    assert text.startswith("env FrozenLake-v1 (toy_text)")
    assert rows["map_name"] == "4x4" and rows["is_slippery"] == "True"
    assert rows["num_envs"] == "1" and "pixels" in rows
    assert "env_name" not in rows and "num_envs" not in text.split("options of every env")[0]
    assert main(["--env", "Nope", "--help"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: unknown env 'Nope'")
