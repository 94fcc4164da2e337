"""Seed 000's two guidelines as decision procedures: configuration (Fig. 9) and tuning (Fig. 10).

``config.advise(facts, requirements)`` recommends a VM disk configuration from host facts
(``host.read_host_facts``); ``diagnose.diagnose(evidence)`` says whether I/O is at its limit and what
would raise it, from an ``evidence.Evidence`` (``evidence.load_evidence`` reads the JSON form).
Every threshold is in ``thresholds`` with its source.
"""
