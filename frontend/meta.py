"""Result types of any aten op from torch itself: its meta function run on
FakeTensors shaped like the operands (symbolic sizes through a ShapeEnv whose
symbols map back to the IR's).

This covers every op torch has a meta function for, at the price of importing
torch and tracing; the verifier uses the cheap torch-free family rules of
:mod:`coil.dialects.aten_infer` instead, and the tests check those rules
against this. Passes that already run torch (decompositions) can use it for
ops the rules do not cover.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily
from xdsl.ir import Attribute

from coil.dialects.aten import AtenOp, ConstantOp, TensorType
from coil.dialects.aten_schema import Kind
from coil.frontend.fake import FakeEnv


class NoMetaResult(Exception):
    """torch could not compute the op's result on FakeTensors."""


def fake_arguments(op: AtenOp, env: FakeEnv) -> tuple[list[Any], dict[str, Any]]:
    """The op's call arguments with FakeTensors (on ``env``) for its tensors."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    groups = op.operand_groups()
    for spec in op.schema().args:
        if spec.is_operand:
            values = []
            for v in groups[spec.name]:
                if v is None:
                    values.append(None)
                elif isinstance(v.type, TensorType):
                    values.append(env.fake_tensor(v.type))
                elif isinstance(v.owner, ConstantOp):
                    values.append(env.python_value(v.owner.python_value))
                else:
                    raise NoMetaResult(f"{op.name}: a run-time scalar operand")
            value = values if spec.kind is not Kind.TENSOR else (values[0] if values else None)
        else:
            value = env.python_value(op.arg(spec.name))
        if spec.kwarg_only:
            kwargs[spec.name] = value
        else:
            args.append(value)
    return args, kwargs


def meta_result_types(op: AtenOp) -> list[Attribute]:
    """The types torch gives ``op``'s results for its operand types."""
    from coil.frontend.fx_importer import value_type

    env = FakeEnv()
    try:
        with torch._guards.tracing(None), unset_fake_temporarily():
            args, kwargs = fake_arguments(op, env)
            with env.mode:
                out = op.overload()(*args, **kwargs)
    except NoMetaResult:
        raise
    except Exception as e:  # the meta function rejects these operands
        raise NoMetaResult(f"{op.name}: {type(e).__name__}: {e}") from e
    values = list(out) if isinstance(out, tuple | list) else [out]
    return [value_type(v, env.back_to_ir) for v in values]
