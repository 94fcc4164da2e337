import types

import vmio


def test_all_is_sorted() -> None:
    assert vmio.__all__ == sorted(vmio.__all__)


def test_all_names_every_public_member() -> None:
    public = {
        name
        for name, value in vars(vmio).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public | {"__version__"} == set(vmio.__all__)
