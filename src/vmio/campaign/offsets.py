"""okayama-hypervisors-2020's operation offsets for a campaign: drawn once from ``[campaign] seed``, stored with the
campaign, and the same for every measured process of every point (see ``vmio.fio.iolog``).

They are block-aligned for the largest block size of the ``ops`` workloads and lie within the first
2 GiB, or within the smallest target when a target is smaller (as far as the spec and the files already
there tell).
"""

from __future__ import annotations

from vmio.errors import InputError
from vmio.fio import iolog
from vmio.spec import Campaign, Target
from vmio.store import Store
from vmio.targets import kind_of


def plan(campaign: Campaign, store: Store) -> list[int] | None:
    """The campaign's offsets: the stored ones, else drawn from its seed now and stored."""
    if campaign.seed is None:
        return None
    stored = store.offsets(campaign.name)
    if stored is not None:
        return stored[1]
    offsets = draw(campaign)
    store.set_offsets(campaign.name, campaign.seed, offsets)
    return offsets


def draw(campaign: Campaign) -> list[int]:
    """Offsets drawn from the campaign's seed, one per operation of its longest ``ops`` workload."""
    assert campaign.seed is not None
    ops = [w for w in campaign.workloads if w.ops]
    count = max(w.ops for w in ops)
    align = max(bs for w in ops for bs in w.bs)
    sizes = [s for t in campaign.targets if (s := target_bytes(t)) is not None]
    span = min([iolog.SPAN, *sizes])
    if span < align:
        raise InputError(
            f"campaign {campaign.name!r}: seed = {campaign.seed} needs room for {align}-byte operations, "
            f"but the smallest target holds {span} bytes; give the targets a larger size"
        )
    return iolog.generate(campaign.seed, count, span, align)


def target_bytes(target: Target) -> int | None:
    """The bytes one measured process of ``target`` can address, where the spec or the host tells."""
    return kind_of(target).size(target)
