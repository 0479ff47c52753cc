"""Option names users bring from other libraries: RLHive, machin and Emote.

``ALIASES`` maps a foreign option name to jaxrl's where the meaning is the same; an agent
whose config has the jaxrl name accepts the foreign one (``validation.build_config``)
and saves the jaxrl name in ``config.yaml``. ``REFUSED`` names the foreign options whose
meaning differs, each with the explanation printed when one is given (one line, exit
code 2). ``FOREIGN_SIGN`` holds options spelled as jaxrl spells them but meaning the
opposite sign elsewhere: a value outside jaxrl's range gets that explanation too.
docs/how-to/other-libraries.md shows the table.

=============================  ==============  ==========================================
foreign name (library)         jaxrl name      note
=============================  ==============  ==========================================
discount_rate (RLHive)         gamma           same discount factor
min_replay_history (RLHive)    learning_starts env steps collected before learning
test_epsilon (RLHive)          eval_epsilon    epsilon of greedy evaluation
std_init (RLHive)              sigma0          initial noise scale of noisy layers
atoms (RLHive)                 num_atoms       C51 support size
discount (machin)              gamma           same discount factor
target_q_tau (Emote)           tau             the online network's share of the target
t_entropy (Emote)              target_entropy  SAC's target entropy
mlp_layers (RLHive)            hidden_sizes    dense widths (also in a torso spec)
channels, kernel_sizes,        same names      conv layers of a torso spec (RLHive's
strides, paddings (RLHive)                     ConvNetwork; networks/spec.py)
init_fn (RLHive, Emote)        same name       a torso spec's initializer by name; the
                                               seeds' names (ortho_init_, xavier_uniform_,
                                               variance_scaling_, ...) are accepted
stack_size (RLHive)            same name       env option: frames stacked (envs/pixels.py)
frame_stack (Emote)            stack_size      env option, the same frame stack
gamma, batch_size (all three)  same names      accepted as they are
entropy_weight (machin)        refused         opposite sign: machin adds it to the loss
beta (RLHive)                  refused         RLHive's priority exponent is jaxrl's alpha
target_net_update_fraction     refused         weighs the other network than jaxrl's tau
grad_clip (RLHive)             refused         element-wise clip; jaxrl's is a global norm
=============================  ==============  ==========================================
"""

from __future__ import annotations

ALIASES: dict[str, str] = {
    "discount_rate": "gamma",  # RLHive
    "discount": "gamma",  # machin
    "min_replay_history": "learning_starts",  # RLHive
    "test_epsilon": "eval_epsilon",  # RLHive
    "std_init": "sigma0",  # RLHive NoisyLinear
    "atoms": "num_atoms",  # RLHive Rainbow
    "target_q_tau": "tau",  # Emote: NewTargetQ = OldTargetQ * (1 - tau) + Q * tau
    "t_entropy": "target_entropy",  # Emote AlphaLoss
    "mlp_layers": "hidden_sizes",  # RLHive ConvNetwork / MLPNetwork
}

REFUSED: dict[str, str] = {
    "beta": (
        "RLHive's 'beta' is the priority exponent, jaxrl's 'alpha'; jaxrl's importance-"
        "sampling exponent is 'beta_start' (annealed to 1): give --agent.alpha"
    ),
    "target_net_update_fraction": (
        "RLHive's 'target_net_update_fraction' weighs the other network than jaxrl's "
        "'tau' (the online network's share of each target update): give --agent.tau "
        "with 1 - that fraction"
    ),
    "grad_clip": (
        "RLHive's 'grad_clip' clips each gradient element; jaxrl's 'max_grad_norm' clips "
        "the global norm of all gradients, a different operation: give --agent.max_grad_norm"
    ),
}

FOREIGN_SIGN: dict[str, str] = {
    "entropy_weight": (
        "machin's 'entropy_weight' has the opposite sign: machin adds weight * entropy to "
        "the loss (a negative weight rewards entropy), jaxrl subtracts it (a bonus >= 0); "
        "give jaxrl's entropy_weight as minus machin's"
    ),
}


def canonical(key: str, fields: set[str] | dict[str, object]) -> str:
    """The jaxrl field ``key`` names among ``fields`` (``key`` itself when it is one, or
    when it is no alias of one)."""
    if key in fields:
        return key
    target = ALIASES.get(key)
    return target if target is not None and target in fields else key


def refusal(key: str, fields: set[str] | dict[str, object]) -> str | None:
    """The explanation for a foreign option that means something else, or None."""
    if key in fields:
        return None
    return REFUSED.get(key)
