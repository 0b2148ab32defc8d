"""coil's dialects. ``get_all_dialects`` maps names to lazy factories (as
``xdsl.dialects.get_all_dialects`` does), so tools start without importing torch."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def aten() -> Dialect:
        from coil.dialects.aten import Aten

        return Aten

    def prims() -> Dialect:
        from coil.dialects.aten import Prims

        return Prims

    def c10d_functional() -> Dialect:
        from coil.dialects.aten import C10dFunctional

        return C10dFunctional

    def c10d_functional_autograd() -> Dialect:
        from coil.dialects.aten import C10dFunctionalAutograd

        return C10dFunctionalAutograd

    def coil() -> Dialect:
        from coil.dialects.symbolic import Coil

        return Coil

    def loop() -> Dialect:
        from coil.dialects.loop import Loop

        return Loop

    def buffer() -> Dialect:
        from coil.dialects.buffer import Buffer

        return Buffer

    def arith() -> Dialect:
        from coil.dialects.arith import Arith

        return Arith

    def tt() -> Dialect:
        from coil.dialects.tt import TT

        return TT

    def host() -> Dialect:
        from coil.dialects.host import Host

        return Host

    def cpu() -> Dialect:
        from coil.dialects.cpu import Cpu

        return Cpu

    return {
        "tt": tt,
        "host": host,
        "cpu": cpu,
        "arith": arith,
        "aten": aten,
        "prims": prims,
        "_c10d_functional": c10d_functional,
        "_c10d_functional_autograd": c10d_functional_autograd,
        "coil": coil,
        "loop": loop,
        "buffer": buffer,
    }
