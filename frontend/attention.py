"""Dynamo-graph rewrites that let ``scaled_dot_product_attention`` keep a fused kernel.

``F.scaled_dot_product_attention`` is CompositeImplicit: AOTAutograd replaces
it by whatever ``torch._fused_sdp_choice`` picks for the traced inputs, and the
GPU kernels (flash, memory-efficient, cuDNN) all require the mask's last
dimension to have stride 1. A broadcast mask (HF BERT under torch.compile
passes ``[B, 1, L, S]`` bool with strides ``(0, L, 1, 0)``) gets none of them,
so the graph coil receives holds the math form, upcast to float32: on an H100,
BERT-base's 12 attentions took 3.1 ms that way against 0.23 ms in eager
(Inductor takes the same math path). A mask whose last stride is not 1 is made
contiguous once (one copy per distinct mask, shared by every attention that
reads it): the same values, and the fused kernel applies; rows with every key
masked are zeroed as the math form does.

Runs on the Dynamo graph, before AOTAutograd traces it; only masks on devices
whose fused kernels have the stride rule (CUDA), unless told otherwise.
"""

from __future__ import annotations

import logging
import operator
from typing import Any

import torch
import torch.fx

log = logging.getLogger("coil")

SDPA_TARGETS = (
    torch._C._nn.scaled_dot_product_attention,
    torch.nn.functional.scaled_dot_product_attention,
)
MASK_POSITION = 3  # q, k, v, attn_mask


def _example(node: object) -> torch.Tensor | None:
    if not isinstance(node, torch.fx.Node):
        return None
    value = node.meta.get("example_value", node.meta.get("val"))
    return value if isinstance(value, torch.Tensor) else None


def contiguous_attention_masks(
    gm: torch.fx.GraphModule, device_types: tuple[str, ...] = ("cuda",)
) -> int:
    """Give every attention mask with a non-unit last stride (on ``device_types``)
    a contiguous copy; returns how many masks were copied.

    The math form returns zeros for a query whose keys are all masked
    (``_safe_softmax``); the fused kernels do not promise that (cuDNN's gave
    finite nonzero rows), so each rewritten attention's result is kept only
    where the query has a key left: ``where(mask.any(-1), out, 0)``, the
    reduction shared by the attentions reading the mask."""
    copies: dict[torch.fx.Node, tuple[torch.fx.Node, torch.fx.Node]] = {}
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in SDPA_TARGETS:
            continue
        in_args = len(node.args) > MASK_POSITION
        mask = node.args[MASK_POSITION] if in_args else node.kwargs.get("attn_mask")
        value = _example(mask)
        if value is None or value.device.type not in device_types or value.dim() == 0:
            continue
        if value.stride(-1) == 1 or value.shape[-1] == 1:
            continue
        query = _example(node.args[0]) if node.args else None
        if value.dtype != torch.bool and (query is None or value.dtype != query.dtype):
            # A float mask of another dtype than the query: cuDNN's kernel read
            # an f32 mask with bf16 queries as garbage (wrong rows next to a
            # masked one, on an H100); the math form stays.
            continue
        if mask not in copies:
            with graph.inserting_before(node):  # the first attention reading it
                copy = graph.call_method("contiguous", (mask,))
                live = copy
                if value.dtype != torch.bool:
                    live = graph.call_function(torch.ne, (copy, float("-inf")))
                keep = graph.call_method("any", (live, -1), {"keepdim": True})
            copies[mask] = (copy, keep)
        copy, keep = copies[mask]
        if in_args:
            node.update_arg(MASK_POSITION, copy)
        else:
            node.update_kwarg("attn_mask", copy)
        with graph.inserting_after(node):
            out = graph.call_function(torch.where, (keep, node, 0.0))
        node.replace_all_uses_with(out, delete_user_cb=lambda user: user is not out)
    if copies:
        _propagate_examples(gm)
        gm.recompile()
    return len(copies)


def _propagate_examples(gm: torch.fx.GraphModule) -> None:
    """Example values for the nodes added (Dynamo's later stages read them)."""
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method") or _example(node) is not None:
            continue
        args = torch.fx.node.map_arg((node.args, node.kwargs), _example_or_node)
        fake = next(
            (v.fake_mode for v in torch.utils._pytree.tree_leaves(args) if hasattr(v, "fake_mode")),
            None,
        )
        if fake is None:
            continue
        (a, kw) = args
        with fake:
            if node.op == "call_method":
                node.meta["example_value"] = getattr(a[0], node.target)(*a[1:], **kw)
            else:
                node.meta["example_value"] = node.target(*a, **kw)


def _example_or_node(node: torch.fx.Node) -> object:
    value = _example(node)
    return value if value is not None else node


# --------------------------------------------------------------------------
# Attention rewrites for training: on the Dynamo graph, before AOTAutograd
# --------------------------------------------------------------------------
#
# ``aten-fuse-attention`` rewrites attention in the graphs AOTAutograd hands
# coil. In training that is too late: AOTAutograd has already differentiated
# the unfused ops, and the forward keeps the [B, H, L, S] weights for a
# backward of two bmm's and a softmax backward. Inductor matches the joint
# forward+backward graph instead (``register_replacement`` traces each
# pattern's backward too). coil rewrites the Dynamo graph, before autograd
# exists: the graph is traced once to aten ops (FakeTensors, coil's
# decompositions), where the same matcher as the pass proves each attention,
# and the Dynamo node computing its result is replaced by a call of
# ``attention_replacement`` on the Dynamo nodes of q, k, v and the masks.
# AOTAutograd then traces SDPA, and its backward is SDPA's fused one.

_DROPOUTS = (torch.nn.functional.dropout, torch.dropout)
_INPLACE_FUNCTIONS = {
    "setitem",
    "iadd",
    "isub",
    "imul",
    "itruediv",
    "ifloordiv",
    "imod",
    "ipow",
    "iand",
    "ior",
    "ixor",
    "ilshift",
    "irshift",
    "imatmul",
}


def _may_attend(gm: torch.fx.GraphModule) -> bool:
    """Whether the Dynamo graph has a softmax and a matrix product (the
    analysis, a trace of the whole graph, is skipped otherwise)."""
    names = {_name(n) for n in gm.graph.nodes if n.op in ("call_function", "call_method")}
    products = {"matmul", "bmm", "baddbmm", "einsum", "mm"}
    return bool(names & {"softmax", "_softmax"}) and bool(names & products)


def _name(node: torch.fx.Node) -> str:
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", "")


def _mutates(node: torch.fx.Node) -> bool:
    """Whether a Dynamo node may write a tensor in place."""
    if node.op not in ("call_function", "call_method", "call_module"):
        return False
    if node.kwargs.get("inplace") or node.kwargs.get("out") is not None:
        return True
    name = _name(node)
    if node.op == "call_module":
        return True  # opaque
    if name in _INPLACE_FUNCTIONS:
        return True
    return name.endswith("_") and not name.startswith("__")


def _dropout_args(node: torch.fx.Node) -> tuple[torch.fx.Node, float] | None:
    """``(input, p)`` of a training-mode dropout node, else None."""
    if node.op != "call_function" or node.target not in _DROPOUTS:
        return None
    names = ("input", "p", "training", "inplace")
    bound = dict(zip(names, node.args))
    bound.update(node.kwargs)
    if node.target is torch.dropout and "train" in bound:
        bound["training"] = bound.pop("train")
    x, p = bound.get("input"), bound.get("p", 0.5)
    training, inplace = bound.get("training", True), bound.get("inplace", False)
    if not isinstance(x, torch.fx.Node) or training is not True or inplace:
        return None
    if isinstance(p, bool) or not isinstance(p, int | float):
        return None
    return x, float(p)


class _AnalysisTrace(torch.fx.Interpreter):
    """Runs the Dynamo graph under make_fx, recording which aten node holds
    each Dynamo node's output and which Dynamo node emitted each aten node."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.aten_of: dict[torch.fx.Node, torch.fx.Node] = {}
        self.emitted_by: dict[torch.fx.Node, torch.fx.Node] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot

        tracer = get_proxy_mode().tracer
        before = set(tracer.graph.nodes)
        out = super().run_node(n)
        for a in tracer.graph.nodes:
            if a not in before:
                self.emitted_by[a] = n
        if isinstance(out, torch.Tensor):
            slot = get_proxy_slot(out, tracer, None)
            if slot is not None:
                self.aten_of[n] = slot.proxy.node
        return out


def _expr(x: Any) -> Any:
    import sympy

    if isinstance(x, torch.fx.Node):
        x = x.meta.get("val")
    if isinstance(x, torch.SymInt):
        return x.node.expr
    if isinstance(x, int) and not isinstance(x, bool):
        return sympy.Integer(x)
    return x


class FxView:
    """An aten-level FX graph (the analysis trace of a Dynamo graph) as the
    matcher's :class:`~coil.transforms.attention_pattern.GraphView`. Values
    are aten nodes; a Dynamo dropout node's output reads as one
    ``coil.dropout`` op; a value is nameable if a Dynamo node computes it."""

    def __init__(self, trace: _AnalysisTrace) -> None:
        self.aten_of = trace.aten_of
        self.emitted_by = trace.emitted_by
        self.mode: Any = None  # the analysis' FakeTensorMode (its tensors' values)
        self.dynamo_of: dict[torch.fx.Node, torch.fx.Node] = {}
        for dyn, aten in trace.aten_of.items():
            self.dynamo_of.setdefault(aten, dyn)
        self.dropouts: dict[torch.fx.Node, tuple[torch.fx.Node, float]] = {}
        for dyn, aten in trace.aten_of.items():
            args = _dropout_args(dyn)
            source = trace.aten_of.get(args[0]) if args is not None else None
            if source is not None and source is not aten:  # p = 0 returns its input
                self.dropouts[aten] = (source, args[1])

    # -- ops
    def _call(self, v: torch.fx.Node) -> torch.fx.Node:
        if v.op == "call_function" and v.target is operator.getitem:
            return v.args[0]
        return v

    def op(self, v: torch.fx.Node) -> str | None:
        if v in self.dropouts:
            return "coil.dropout"
        call = self._call(v)
        if call.op != "call_function" or not isinstance(call.target, torch._ops.OpOverload):
            return None
        return str(call.target)

    def result_index(self, v: torch.fx.Node) -> int:
        if v.op == "call_function" and v.target is operator.getitem:
            return int(v.args[1])
        return 0

    def _bound(self, v: torch.fx.Node) -> dict[str, Any]:
        call = self._call(v)
        schema = call.target._schema
        bound: dict[str, Any] = {}
        for i, a in enumerate(schema.arguments):
            if i < len(call.args) and not a.kwarg_only:
                bound[a.name] = call.args[i]
            elif a.name in call.kwargs:
                bound[a.name] = call.kwargs[a.name]
            elif a.has_default_value():
                bound[a.name] = a.default_value
        return bound

    def operand(self, v: torch.fx.Node, name: str) -> Any:
        from coil.transforms.attention_pattern import Const

        if v in self.dropouts:
            return self.dropouts[v][0] if name == "input" else None
        value = self._bound(v).get(name)
        if value is None:
            return None
        if isinstance(value, torch.fx.Node):
            return value
        if isinstance(value, bool | int | float):
            return Const(value)
        return None

    def arg(self, v: torch.fx.Node, name: str) -> Any:
        if v in self.dropouts:
            return self.dropouts[v][1] if name == "p" else None
        value = self._bound(v).get(name)
        if isinstance(value, torch.dtype):
            return str(value).removeprefix("torch.")
        if isinstance(value, list | tuple):
            return [_expr(x) for x in value]
        if isinstance(value, torch.fx.Node | torch.SymInt):
            return _expr(value)
        return value

    def scalar(self, v: Any) -> float | None:
        from coil.transforms.attention_pattern import Const

        if isinstance(v, Const):
            value = v.value
        elif isinstance(v, torch.fx.Node) and v.op == "call_function":
            bound = self._bound(v) if isinstance(v.target, torch._ops.OpOverload) else {}
            if v.target is torch.ops.aten.scalar_tensor.default:
                value = bound.get("s")
            elif v.target is torch.ops.aten.full.default and not bound.get("size"):
                value = bound.get("fill_value")
            else:
                return None
        else:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    def _val(self, v: torch.fx.Node) -> torch.Tensor:
        return v.meta["val"]

    def shape(self, v: torch.fx.Node) -> tuple[Any, ...]:
        return tuple(_expr(d) for d in self._val(v).shape)

    def dtype(self, v: torch.fx.Node) -> str:
        return str(self._val(v).dtype).removeprefix("torch.")

    def device(self, v: torch.fx.Node) -> str:
        return str(self._val(v).device)

    def users(self, v: torch.fx.Node) -> list[Any]:
        out: list[Any] = []
        dropped_into = [a for a, (x, _) in self.dropouts.items() if x is v]
        for u in v.users:
            if u.op == "output":
                out.append(None)
                continue
            dyn = self.emitted_by.get(u)
            if dropped_into and dyn is not None and self.aten_of.get(dyn) in dropped_into:
                continue  # inside the dropout, counted once below
            mutable = isinstance(u.target, torch._ops.OpOverload) and u.target._schema.is_mutable
            if not u.users and not mutable:
                continue  # dead (an alias the trace made and dropped)
            out.append(u)
        return out + dropped_into

    def nameable(self, v: torch.fx.Node) -> bool:
        return v in self.dynamo_of


def _fused(args: list[torch.Tensor], spec: tuple) -> bool:
    """Whether torch runs a fused kernel for the replacement's operands: its
    trace calls one (``torch._fused_sdp_choice`` itself answers "math" for any
    FakeTensor, while SDPA's composite asks the real selector)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from coil.transforms.aten_fuse_attention import FUSED_KERNELS
    from coil.transforms.attention_pattern import attention_replacement

    gm = make_fx(lambda *t: attention_replacement(*t, spec=spec))(*args)
    return any(
        any(kernel in str(n.target) for kernel in FUSED_KERNELS)
        for n in gm.graph.nodes
        if n.op == "call_function"
    )


def fuse_attention_for_autograd(gm: torch.fx.GraphModule, fused_only: bool = True) -> int:
    """Rewrite the attention blocks of a Dynamo graph that will be differentiated
    to calls of ``attention_replacement`` (see the comment above); returns how
    many were rewritten. A block that cannot be rewritten stays as it is; so
    does the whole graph when it cannot be analysed."""
    if not _may_attend(gm):
        return 0
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if isinstance(n.target, torch._ops.HigherOrderOperator):
            return 0  # a region with its own autograd rules (checkpoint, autograd.Function)
        if "autocast" in _name(n):
            # autocast's casts are not Dynamo nodes the rewrite could read,
            # and the analysis must not leave its state entered on a failure
            return 0
    try:
        with torch.set_grad_enabled(torch.is_grad_enabled()):  # restored on any exit
            view, products = _analyse(gm)
    except Exception as e:  # never fail a user's program over an optimization
        log.info("coil: attention rewrite before autograd skipped: %s: %s", type(e).__name__, e)
        return 0
    rewriter = _DynamoRewriter(gm, view, fused_only)
    for product in products:
        try:
            rewriter.rewrite(product)
        except Exception as e:
            log.info("coil: an attention block stays unfused: %s: %s", type(e).__name__, e)
    if rewriter.count:
        gm.recompile()
        log.debug("coil: %d attention block(s) rewritten to SDPA before autograd", rewriter.count)
    return rewriter.count


def _analyse(gm: torch.fx.GraphModule) -> tuple[FxView, list[torch.fx.Node]]:
    """The graph traced to aten ops on FakeTensors (coil's decompositions for
    inference graphs, so the matcher sees what ``aten-fuse-attention`` sees),
    as a matcher view, and its matrix products."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from coil.frontend.decompositions import decomposition_table

    examples = [n.meta.get("example_value") for n in gm.graph.nodes if n.op == "placeholder"]
    fakes = [x for x in examples if isinstance(x, FakeTensor)]
    if not fakes:
        raise ValueError("the graph's inputs have no FakeTensor examples")
    # A mode of its own on Dynamo's ShapeEnv: the same symbolic sizes, and
    # nothing the analysis does reaches the tensors AOTAutograd will trace.
    mode = FakeTensorMode(shape_env=fakes[0].fake_mode.shape_env, allow_non_fake_inputs=True)
    args = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in examples]
    trace = _AnalysisTrace(gm)
    with mode:
        analysis = make_fx(
            lambda *a: trace.run(*a), decomposition_table=decomposition_table(False)
        )(*args)
    view = FxView(trace)
    view.mode = mode
    products = [
        n
        for n in analysis.graph.nodes
        if n.op == "call_function"
        and n.target in (torch.ops.aten.bmm.default, torch.ops.aten.mm.default)
    ]
    return view, products


class _DynamoRewriter:
    """Replaces proven attentions in the Dynamo graph, one product at a time."""

    def __init__(self, gm: torch.fx.GraphModule, view: FxView, fused_only: bool) -> None:
        self.gm, self.view, self.fused_only = gm, view, fused_only
        self.order = {n: i for i, n in enumerate(gm.graph.nodes)}
        # An earlier rewrite may have replaced a node a later one reads (the
        # output of one attention, the query of the next).
        self.replaced: dict[torch.fx.Node, torch.fx.Node] = {}
        self.count = 0

    def _dynamo(self, aten: torch.fx.Node) -> torch.fx.Node:
        node = self.view.dynamo_of[aten]
        return self.replaced.get(node, node)

    def rewrite(self, product: torch.fx.Node) -> None:
        from coil.transforms.attention_pattern import match_attention

        for allow_gqa in (True, False):
            match = match_attention(self.view, product, allow_gqa=allow_gqa)
            if match is None:
                return
            spec = match.spec.as_tuple()
            operands = [match.query, match.key, match.value, *match.masks]
            with self.view.mode:
                fused = _fused([a.meta["val"] for a in operands], spec)
            if fused or not self.fused_only:
                self._replace(self._dynamo(match.target), [self._dynamo(a) for a in operands], spec)
                return
            if not match.spec.gqa:
                return  # torch runs its math path for these operands
            # no fused kernel for these heads: try k and v repeated

    def _replace(self, target: torch.fx.Node, nodes: list[torch.fx.Node], spec: tuple) -> None:
        from torch._subclasses.fake_tensor import FakeTensor

        from coil.transforms.attention_pattern import attention_replacement

        graph, order = self.gm.graph, self.order
        if target not in order or any(n not in order for n in nodes):
            return
        if any(order[n] >= order[target] for n in nodes):
            return
        first = min(order[n] for n in nodes)
        if any(_mutates(n) for n in graph.nodes if first <= order[n] < order[target]):
            return  # the operands might change between their reads and the target
        example = [n.meta.get("example_value") for n in nodes]
        value = None
        if all(isinstance(x, FakeTensor) for x in example):
            with example[0].fake_mode:
                value = attention_replacement(*example, spec=spec)
        with graph.inserting_before(target):
            new = graph.call_function(attention_replacement, tuple(nodes), {"spec": spec})
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if key in target.meta:
                new.meta[key] = target.meta[key]
        if value is not None:
            new.meta["example_value"] = value
        target.replace_all_uses_with(new)
        self.replaced[target] = new
        _erase_dead(self.gm, target)
        self.order = {n: i for i, n in enumerate(graph.nodes)}
        self.count += 1


def _erase_dead(gm: torch.fx.GraphModule, start: torch.fx.Node) -> None:
    """Erase ``start`` and what only it read, unless it writes in place."""
    work, erased = [start], set()
    while work:
        node = work.pop()
        if node in erased or node.users or _mutates(node):
            continue
        if node.op not in ("call_function", "call_method"):
            continue
        inputs = list(node.all_input_nodes)
        gm.graph.erase_node(node)
        erased.add(node)
        work.extend(inputs)
