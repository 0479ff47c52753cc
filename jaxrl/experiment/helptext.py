"""What ``python -m jaxrl.train --help`` prints: one line per agent and env family and the
``--run.*`` and ``--env.*`` options, and, with ``--agent NAME``, that agent's options with
their defaults, valid ranges and meanings: its own first, then the options it shares with
other agents under their own headings (``SHARED``).

A meaning is the first sentence of the option's entry in the ``Attributes:`` section of
the docstring of the config class that declares it (or of a subclass, which may say more
about its own defaults), whole: an entry's first sentence is its summary."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, cast

from jaxrl import agents, envs
from jaxrl.agents.auxiliary.latent_prior import LatentPriorOptions
from jaxrl.agents.auxiliary.options import AuxiliaryOptions
from jaxrl.agents.common.optim import EpsilonOptions, OptimizerOptions
from jaxrl.agents.common.replay_choice import ReplayOptions
from jaxrl.envs.pixels import PixelOptions
from jaxrl.experiment.config import EnvConfig
from jaxrl.runners.base import RunConfig
from jaxrl.validation import declared_range

_ATTRIBUTE = re.compile(r"^( {2,8})([a-z_][a-z0-9_]*(?:, [a-z_][a-z0-9_]*)*): (.*)$")
_EMBEDDED = re.compile(r"(?<=\.) +(?=[a-z_][a-z0-9_]*(?:, [a-z_][a-z0-9_]*)*: )")
_NOT_AN_END = {"e.g.", "i.e.", "al.", "cf.", "vs.", "approx."}  # the last word ends no sentence

# Option classes several agents share: their options are listed after the agent's own,
# under these headings, in this order.
SHARED: tuple[tuple[tuple[type, ...], str], ...] = (
    ((EpsilonOptions,), "epsilon-greedy exploration (shared by the Q-learning agents)"),
    ((OptimizerOptions,), "optimizer and learning-rate schedule (shared by every agent)"),
    ((AuxiliaryOptions, LatentPriorOptions), "demonstrations and auxiliary learners: AMP, "
     "action symmetry, CURL, a VAE action prior (shared; all off by default)"),
    ((ReplayOptions,), "replay buffer (shared by the agents that learn from replay)"),
)  # fmt: skip


def first_sentence(text: str) -> str:
    """``text`` up to its first full stop outside parentheses and double backticks that is
    followed by a space or ends it (not that of ``e.g.``, ``et al.``, ...); all of it when
    it has none."""
    depth, code = 0, False
    for i, char in enumerate(text):
        if text.startswith("``", i):
            code = not code if i == 0 or text[i - 1] != "`" else code
        elif char in "([" and not code:
            depth += 1
        elif char in ")]" and not code:
            depth = max(0, depth - 1)
        elif char == "." and depth == 0 and not code and text[i + 1 : i + 2] in ("", " "):
            if text[: i + 1].rsplit(" ", 1)[-1].lstrip("(") not in _NOT_AN_END:
                return text[: i + 1]
    return text


def _entries(doc: str) -> dict[str, str]:
    """The ``Attributes:`` (or ``Args:``) entries of ``doc``: name -> its text, the
    continuation lines (indented deeper) joined; ``a, b: ...`` documents each name, and
    an entry going on with another after a full stop (``gamma: 0.99. tau: 0.005.``) both
    (as ``scripts/docs_hooks.py`` reads them for the algorithm pages)."""
    entries: dict[str, str] = {}
    names: list[str] = []
    indent, in_section = 0, False
    for line in doc.splitlines():
        if line.strip() in ("Attributes:", "Args:"):
            in_section, names, indent = True, [], 0
            continue
        if not in_section or not line.strip():
            names = []
            continue
        match = _ATTRIBUTE.match(line)
        depth = len(line) - len(line.lstrip())
        if indent and depth < indent:  # the section's end
            in_section, names, indent = False, [], 0
        elif match and (not names or depth <= indent):
            indent, names = depth, [n.strip() for n in match.group(2).split(",")]
            for name in names:
                entries[name] = match.group(3).strip()
        elif names and depth > indent:
            for name in names:
                entries[name] += " " + line.strip()
        else:  # an entry of no option's name (``optimizer and its options: ...``)
            names = []
    for name, text in list(entries.items()):  # ``gamma: discount. tau: Polyak rate.``
        first, *more = _EMBEDDED.split(text)
        entries[name] = first
        for piece in more:
            others, _, meaning = piece.partition(": ")
            entries.update({other.strip(): meaning for other in others.split(",")})
    return entries


def option_docs(cls: type) -> dict[str, str]:
    """Field name -> the first sentence of its entry in the docstring of ``cls`` or of the
    nearest base class that documents it."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        for name, text in _entries(klass.__doc__ or "").items():
            docs[name] = first_sentence(text)
    return docs


def declared_by(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO that first declared field ``name`` (the most basic)."""
    return [k for k in cls.__mro__ if name in k.__dict__.get("__annotations__", {})][-1]


def option_lines(cls: type, names: list[str] | None = None) -> list[str]:
    """``  NAME  default  [range]  meaning``, one line per field of the dataclass ``cls``
    (or per field of ``names``), the columns as wide as their widest entry."""
    docs = option_docs(cls)
    rows = []
    for f in dataclasses.fields(cls):
        if names is not None and f.name not in names:
            continue
        factory = cast(Any, f.default_factory)
        default: Any = f.default if f.default is not dataclasses.MISSING else factory()
        default = list(default) if isinstance(default, tuple) else default
        spec = declared_range(cls, f.name)
        rows.append((f.name, str(default), spec.describe() if spec else "", docs.get(f.name, "")))
    wide = [min(16, max([12, *(len(row[i]) + 1 for row in rows)])) for i in (1, 2)]
    return [f"  {n:<24} {d:<{wide[0]}} {r:<{wide[1]}} {m}" for n, d, r, m in rows]


def agent_help(name: str) -> str:
    """The options of agent ``name``: its own first, then each ``SHARED`` group it has
    under its heading; ``--agent.KEY  default  [range]  meaning``, one a line."""
    entry = agents.entry(name)
    lines = [
        f"agent {name}: {entry.description}",
        "options (--agent.KEY VALUE): name, default, valid range, meaning",
    ]
    if entry.config is None:
        return "\n".join([*lines, "  (this agent takes no options)"])
    config = entry.config
    groups: dict[str, list[str]] = {heading: [] for _, heading in SHARED}
    own: list[str] = []
    for f in dataclasses.fields(config):
        origin = declared_by(config, f.name)
        heading = next((h for classes, h in SHARED if origin in classes), None)
        (own if heading is None else groups[heading]).append(f.name)
    lines += option_lines(config, own)
    for heading, names in groups.items():
        if names:
            lines += ["", f"{heading}:", *option_lines(config, names)]
    lines += ["", "run and env options (--run.KEY, --env.KEY): python -m jaxrl.train --help"]
    return "\n".join(lines)


def env_help(name: str) -> str:
    """``--env NAME --help``: the env's own options (its factory's keyword arguments, with
    their defaults), then the options every env takes."""
    import inspect

    canonical, own = envs.options(name)
    lines = [f"env {canonical} ({envs.group(canonical)})"]
    if own is None:
        lines.append("its own options are its maker's keyword arguments (--env.KEY VALUE)")
    else:
        lines.append("its own options (--env.KEY VALUE): name, default")
        shown = {
            k: "(required)" if v is inspect.Parameter.empty else str(v) for k, v in own.items()
        }
        lines += [f"  {k:<24} {v}" for k, v in shown.items()] or ["  none"]
    lines += ["", "options of every env:", *option_lines(EnvConfig, ["num_envs"])]
    return "\n".join([*lines, *option_lines(PixelOptions)])


def run_and_env_help() -> list[str]:
    """The ``--run.*`` and ``--env.*`` options, one a line, for ``--help``."""
    return [
        "run options (--run.KEY VALUE): name, default, valid range, meaning",
        *option_lines(RunConfig),
        "",
        "env options (--env.KEY VALUE), for any env:",
        *option_lines(EnvConfig, ["num_envs"]),
        *option_lines(PixelOptions),
        "and each env's own options, passed to its factory (FrozenLake: map_name, "
        "is_slippery; Atari:",
        "backend, frame_skip, ...); a key the env does not take is refused, naming the valid ones",
    ]


def epilog() -> str:
    """One line per agent and per env family, the run and env options, and how to name
    the rest."""
    lines = ["agents (python -m jaxrl.train --agent NAME --help lists its options):"]
    lines += [f"  {name:<12} {desc}" for name, desc in agents.available().items()]
    lines += ["", "environments, by family:"]
    for key, names in envs.groups().items():
        title = envs.GROUP_TITLES.get(key, key)
        shown = ", ".join(names) if len(names) <= 6 else f"{len(names)} games, e.g. {names[0]}"
        lines.append(f"  {title:<16} {shown}")
    lines += [
        f"  {'Gymnasium':<16} gym:ID, any Gymnasium id (stepped on the host)",
        "",
        *run_and_env_help(),
        "",
        "overrides: --agent.KEY VALUE, --env.KEY VALUE, --run.KEY VALUE "
        "(e.g. --agent.lr 3e-4 --agent.n_step 3 --run.eval_every 20000)",
        "a user's own agent or env: --agent package.module:factory, --env package.module:factory",
    ]
    return "\n".join(lines)
