# RUN: %served_python %s | filecheck %s
# Multi-result ops (max.dim, split) and a nested output structure with None:
# getitem picks results; the pytree shape is kept in coil.output_tree.
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from coil.frontend.fx_importer import import_graph
from coil.ir import print_module


def fn(x):
    values, indices = torch.max(x, dim=1)
    a, b = torch.split(x, [2, 6], dim=1)
    return values, [indices, (a, None)], b.sum()


# make_fx keeps the output structure (dynamo would flatten it).
print(print_module(import_graph(make_fx(fn)(torch.randn(4, 8)))), end="")

# CHECK-LABEL: func.func @forward(%x: !aten.tensor<[4, 8], f32>)
# CHECK-SAME: attributes {coil.output_tree = "(0, [1, (2, None)], 3)"}
# CHECK: %[[V:.*]], %[[I:.*]] = aten.max.dim(%x, dim = 1) : (!aten.tensor<[4], f32>, !aten.tensor<[4], i64>)
# CHECK: %[[A:.*]], %[[B:.*]] = aten.split_with_sizes.default(%x, split_sizes = [2, 6], dim = 1)
# CHECK: %[[S:.*]] = aten.sum.default(%[[B]])
# CHECK: func.return %[[V]], %[[I]], %[[A]], %[[S]]
