"""Which containers run a torchft replica group (trainkit's --fault-tolerance torchft), and what they say.

Shared by the torchft-* rules and by the rules whose checks change for replica groups (a group's
torchrun is a world of its own: --nnodes=1 is right there). Facts: kdt.operators.torchft.
"""
from __future__ import annotations

from ...operators import torchft as TFT
from ..pods import command_line
from ._torchrun import env_value, flag


def is_replica_group(c: dict) -> bool:
    """The container runs a sample as one torchft replica group (env or flag)."""
    if str(env_value(c, TFT.ENV_MODE) or "").strip() == TFT.MODE_TORCHFT:
        return True
    return flag(command_line(c), (TFT.FLAG_MODE,)) == TFT.MODE_TORCHFT
