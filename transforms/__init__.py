"""Passes that stay inside one dialect. ``get_all_passes`` maps each registered
pass name to a lazy factory, as ``xdsl.transforms.get_all_passes`` does."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def aten_decompose() -> type[ModulePass]:
        from coil.transforms.aten_decompose import AtenDecomposePass

        return AtenDecomposePass

    return {"aten-decompose": aten_decompose}
