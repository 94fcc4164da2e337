"""Miss-ratio curves of LRU caches, below the features that use them (membal's simulator and bounds,
relocate's ``analyze --cache-curve``).

- ``compiled``: the numba ``jit`` (stand-ins without the ``sim`` extra), the int64 arrays, a prefetch hint.
- ``stackdist``: Mattson LRU stack distances, compiled; ``exact``: exact curves and their sampled estimates.
- ``shards``: the SHARDS sampler (fixed rate or size, over chunks); ``curve``: curves of streamed traces.
- ``points``: a curve read at cache sizes in bytes.
"""
