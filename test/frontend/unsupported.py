# RUN: %served_python %s 2>&1 | filecheck %s
# A node coil cannot represent (a call of a plain Python/torch function, as a
# higher-order op would be) is an error naming the node and the user line,
# never a silent skip. An OpOverload outside the generated set imports as
# aten.operator.
import torch
import torch.fx

from coil.frontend.fx_importer import GraphImportError, import_graph
from coil.ir import print_module

graph = torch.fx.Graph()
x = graph.placeholder("x")
x.meta["val"] = torch.empty(3)
y = graph.call_function(torch.ops.aten.linalg_vector_norm.default, (x, 2.0))
y.meta["val"] = torch.empty(())
z = graph.call_function(torch.sin, (y,))
z.meta["val"] = torch.empty(())
z.meta["stack_trace"] = '  File "model.py", line 12, in forward\n    torch.sin(y)'
graph.output(z)
gm = torch.fx.GraphModule(torch.nn.Module(), graph)
try:
    import_graph(gm)
except GraphImportError as e:
    print("error:", e)
# CHECK: error: node 'sin' (call_function torch.sin) at model.py:12: cannot import a call of torch.sin: only OpOverloads

graph.output(y)
graph.erase_node(next(n for n in graph.nodes if n.op == "output"))
graph.erase_node(z)
print(print_module(import_graph(torch.fx.GraphModule(torch.nn.Module(), graph))), end="")
# CHECK: aten.operator "aten::linalg_vector_norm"(%x, 2.0) : !aten.tensor<[], f32>
