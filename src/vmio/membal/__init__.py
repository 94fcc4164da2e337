"""Cache-aware memory balancing between VMs (hitachi-membal-2014), simulated.

- ``scenario``: TOML scenario files → :class:`~vmio.membal.scenario.Scenario` (``specfields``,
  ``specworkloads`` hold the field readers and the workload tables); ``workloads`` and ``trace`` make the
  access streams.
- ``simulator``: several VMs' LRU page caches (``engine`` over the numba ``kernels``, or the plain-Python
  ``reference``), interleaved by rate, a policy every epoch.
- ``policies``: ``equal``, ``efficiency`` (hitachi-membal-2014), ``mom``; ``marginal`` (the default) and ``refault``
  live in ``marginal``. ``observation`` is the seam for a live balloon controller: build one
  ``VmObservation`` per VM per interval, call ``Policy.decide``, apply the allocations it returns (pages).
- miss-ratio curves (exact, SHARDS-sampled, streamed: ``vmio membal mrc``) live in :mod:`vmio.mrc`, which
  relocate uses too; ``split``: the optimal (DP) and lookahead
  splits; ``bounds``: the per-epoch optimal and static oracle bounds; ``outcome``: all of it for one scenario.
- ``cli``: ``vmio membal sim SCENARIO [--json] [--plots DIR]``; ``plots``: the figures.

Live (``vmio membal run``, ``vmio.cli.membal_live``): ``signals`` turns two guest agent records into observations and
memory pressure; ``governor`` applies floors, ceilings, the maximum step, hysteresis, deflation under
pressure and the budget to a policy's proposal; ``live`` is the controller (which policies can run live and
why); ``balloon`` the guest side (QMP balloon, agent stream); ``record`` the store tables; ``livework`` the
fio page-cache load and the ``--config`` file; ``liverun`` one whole run. See ``docs/membal.md``.
"""
