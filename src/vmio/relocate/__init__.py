"""Hot-spot relocation of VM images that share one hard disk (kogakuin-relocate-2011).

Block traces → heat per extent → a relocation plan (all images' hot extents in one zone) → replay on an
HDD model before and after → apply the plan to a copy of the disk (or generate device-mapper / LVM steps).

Traces come from ``vmio.traces`` (the normalized ``Trace`` and one reader per format). Modules: ``capture``
(blktrace on the host), ``heat`` and ``plots`` (access distribution), ``disk`` (HDD model), ``replay`` (the simulator),
``planner`` (plans), ``synthetic`` and ``ffsb`` (FFSB-like streams), ``calibration`` (against the paper), ``evaluate`` (before/after), ``apply`` (copying
under a journal) and ``devmapper`` (dm tables and pvmove commands).
"""
