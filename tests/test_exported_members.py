import types

import vmio


def test_all_is_sorted() -> None:
    assert vmio.__all__ == sorted(vmio.__all__)


def test_all_names_every_public_member() -> None:
    # dir(vmio) lists the names imported on first use too (vmio.__getattr__); getattr resolves each
    public = {
        name
        for name in dir(vmio)
        if not name.startswith("_") and not isinstance(getattr(vmio, name), types.ModuleType)
    }
    assert public | {"__version__"} == set(vmio.__all__)


def test_every_name_resolves_to_what_its_module_holds() -> None:
    from vmio.campaign import run
    from vmio.store import Store

    assert vmio.run_campaign is run and vmio.Store is Store
    for name in vmio.__all__:
        assert getattr(vmio, name) is not None, name
