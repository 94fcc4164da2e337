"""Seed 000's two guidelines as decision procedures: configuration (Fig. 9) and tuning (Fig. 10).

``config.advise(facts, requirements)`` recommends a VM disk configuration from host facts
(``host.read_host_facts``); ``diagnose.diagnose(evidence)`` says whether I/O is at its limit and what
would raise it, from an ``evidence.Evidence`` (``evidence.load_evidence`` reads the JSON form).
Every threshold is in ``thresholds`` with its source.

``live_sample.diagnose_live(seconds, Seams())`` diagnoses the QEMU processes running now (``live`` finds
them and asks them over QMP or libvirt; ``cmdline`` reads what their command lines say).
``tune.plan(store, campaign, caps=...)`` applies each VM target's top action to its spec (``actions``) and
``tune.execute`` re-runs the points as a new campaign and compares them with ``vmio compare``'s machinery.
"""
