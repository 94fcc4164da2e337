"""hitachi-nvme-2016's two guidelines as decision procedures: configuration (Fig. 9) and tuning (Fig. 10).

``config_guideline.advise(facts, requirements)`` recommends a VM disk configuration (``disk_config``) from
this host's inventory (``inventory.read_host_facts``); ``diagnose.diagnose(evidence)`` says whether I/O is
at its limit and what would raise it, from an ``evidence.Evidence`` (``evidence.load_evidence`` reads the
JSON form, ``from_store`` builds it from a stored campaign). Every threshold is in ``thresholds`` with its
source.

``live_sample.diagnose_live(seconds, Seams())`` diagnoses the QEMU processes running now (``vmio.qemu.running``
finds them and asks them over QMP or libvirt; ``vmio.qemu.cmdline`` reads what their command lines say).
``tune.plan(store, campaign, caps=...)`` applies each VM target's top action to its spec (``actions``) and
``tune.execute`` re-runs the points as a new campaign; the CLI compares them with ``vmio compare``'s machinery.
"""
