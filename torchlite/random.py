"""torchlite.random: seeding and the state of the default generator (torch.random).

The generator is Philox4x32-10, counter-based: see torchlite/_ops/random.py for the stream
layout."""
from ._ops.random import (Generator, default_generator, manual_seed, seed, initial_seed,
                          get_rng_state, set_rng_state, fork_rng)

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng"]
