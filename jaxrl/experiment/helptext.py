"""What ``python -m jaxrl.train --help`` prints: one line per agent and env family, and,
with ``--agent NAME``, that agent's options with their defaults, valid ranges and the
first line of their meaning (from the ``Attributes:`` section of the config class's
docstring, or a base class's where a variant only changes defaults)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, cast

from jaxrl import agents, envs
from jaxrl.validation import declared_range

_ATTRIBUTE = re.compile(r"^ {4,8}([a-z_][a-z0-9_, ]*): (.*)$")


def option_docs(cls: type) -> dict[str, str]:
    """Field name -> the first line of its meaning in ``cls``'s docstring (or its bases');
    a line naming several fields (``a, b, c: ...``) documents each."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        in_attributes = False
        for line in (klass.__doc__ or "").splitlines():
            if line.strip() in ("Attributes:", "Args:"):
                in_attributes = True
                continue
            match = _ATTRIBUTE.match(line) if in_attributes else None
            if match:
                for name in match.group(1).split(","):
                    docs[name.strip()] = match.group(2).strip()
    return docs


def agent_help(name: str) -> str:
    """The options of agent ``name``: ``--agent.KEY  default  [range]  meaning``, one a line."""
    entry = agents.entry(name)
    lines = [
        f"agent {name}: {entry.description}",
        "options (--agent.KEY VALUE): name, default, valid range, meaning",
    ]
    if entry.config is None:
        return "\n".join([*lines, "  (this agent takes no options)"])
    docs = option_docs(entry.config)
    for f in dataclasses.fields(entry.config):
        factory = cast(Any, f.default_factory)
        default: Any = f.default if f.default is not dataclasses.MISSING else factory()
        default = list(default) if isinstance(default, tuple) else default
        spec = declared_range(entry.config, f.name)
        where = spec.describe() if spec is not None else ""
        lines.append(f"  {f.name:<22} {default!s:<12} {where:<12} {docs.get(f.name, '')}")
    return "\n".join(lines)


def epilog() -> str:
    """One line per agent and per env family, and how to name the rest."""
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
        "overrides: --agent.KEY VALUE, --env.KEY VALUE, --run.KEY VALUE "
        "(e.g. --agent.lr 3e-4 --agent.n_step 3 --run.eval_every 20000)",
        "a user's own agent or env: --agent package.module:factory, --env package.module:factory",
    ]
    return "\n".join(lines)
