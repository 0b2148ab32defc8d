"""The cache ahead of AOTAutograd: a warm start skips tracing, not just coil's passes.

coil's graph cache (:mod:`coil.runtime.graphcache`) is keyed by the graph
AOTAutograd produces, so a hit still pays for AOTAutograd's trace,
functionalization, decompositions and partition of the Dynamo graph: most of a
warm start (GPT-2, 12 layers, on a CPU: 0.8 s of AOTAutograd against 0.1 s of
coil loading its cached module). Inductor skips that work with torch's
``AOTAutogradCache``, keyed by the *Dynamo* graph; this module lets coil use
the same cache rather than writing a second one:

* each graph compiler is a ``SerializableAOTDispatchCompiler`` returning a
  :class:`CoilOutputCode` (torch's ``OutputCode`` interface), which holds what
  rebuilds the compiled callable without compiling: the emitted ``-t python``
  source, whether it runs under Triton's interpreter, the lifted constants and
  effect-token stand-ins, and the CUDA graph settings (a :class:`Recipe`);
* entries are *bundled* (``torch._functorch.config.bundled_autograd_cache``):
  the pickled ``OutputCode`` travels in the AOTAutograd entry itself, so a hit
  needs neither Inductor's FX graph cache nor coil's graph cache;
* the key is torch's (the Dynamo graph's code, input metadata, grad and
  autocast state, torch's configs, versions) plus ``cache_key_tag``, torch's
  own hook for what else a compile depends on: here coil's versions and source
  hash, the per-graph pipeline string and the backend options that change
  code (the same components as the graph cache's);
* entries live under ``COIL_CACHE_DIR/aotautograd`` (torch keeps its own under
  its inductor cache directory), written atomically by torch; an unreadable
  entry is skipped with torch's warning and the graph recompiles.

Torch's key costs a warm start more than everything else coil does on a
hit: computing it the first time in a process imports Inductor's code
generators and hashes torch's and Triton's sources (a two-layer GPT-2 on a
CPU: 1.3 s of a 1.8 s backend share; Inductor pays the same). So inside
coil's scope the key function is memoized on disk (:func:`_memo_key`): a
*prekey*, hashed with torch's own cache pickler over the Dynamo graph, its
inputs' metadata, the AOT config and the state torch's key records (grad
mode, autocast, deterministic algorithms, the default dtype, functorch's and
Inductor's configs), plus the torch/Triton/Python versions, the CUDA devices
and ``cache_key_tag`` (coil's versions, pipeline and options), maps to the
key torch computed for it once; a hit still runs torch's cacheability check
of the graph. What the prekey leaves out cannot change coil's entry:
Inductor's custom passes, torch's and Triton's source hashes within one
version. A graph the prekey cannot hash, or one calling user-defined Triton
kernels (whose sources torch's key reads from a side table), takes torch's
key as before.

Scope. Inference graphs only: a training graph's backward compiles lazily at
the first ``backward()``, after the compile that would save the entry has
returned (torch saves it then only for Inductor's own entries); those keep the
graph cache. A Dynamo graph holding tensor attributes is bypassed too: torch
keys tensors by metadata only (Inductor re-reads them from the live graph on a
hit), so an entry could hand back another value's constants. A graph that
compiled to something other than a loadable module (eager fallback, the C++
wrapper, a pipeline stopping above the host level) is not stored, nor is one
with effectful ops (their effect tokens are not passed the same way after a
hit). Each
lookup's outcome is logged once on the ``coil`` logger (INFO), as the graph
cache does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch

from coil import config
from coil.dialects.signature import aligned_by_offset
from coil.runtime.compiled import Recipe, boxed, rebuild

log = logging.getLogger("coil")


@dataclasses.dataclass(frozen=True)
class _Empty:
    """An empty constant as an entry keeps it."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    device: str

    def tensor(self) -> torch.Tensor:
        return torch.empty_strided(self.size, self.stride, dtype=self.dtype, device=self.device)


def _output_code_base() -> type:
    try:
        from torch._inductor.output_code import OutputCode
    except ImportError:  # a torch without the interface: nothing is cached
        return object
    return OutputCode


@dataclasses.dataclass
class CoilOutputCode(_output_code_base()):  # type: ignore[misc]
    """A compiled graph as AOTAutograd's cache stores it (torch's ``OutputCode``).

    Called boxed (one list of inputs), like Inductor's ``CompiledFxGraph``."""

    recipe: Recipe | None = None
    bypass: str | None = None  # why it is not stored (recipe is None)
    run: Callable[[list[Any]], Any] | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        # An instance attribute: AOTAutograd's wrappers copy the instance's
        # __dict__ (functools.update_wrapper) to tell a boxed callee.
        self._boxed_call = True

    def __call__(self, inputs: list[Any]) -> Any:
        return self.run(inputs)

    def prepare_for_serialization(self) -> None:
        from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache

        if self.recipe is None:
            raise BypassAOTAutogradCache(f"coil: {self.bypass}")
        constants = []
        for k, t in enumerate(self.recipe.constants):
            if isinstance(t, torch.Tensor) and t.numel() == 0:
                # Empty constants (GPT-2's on a GPU) may have no storage to pickle.
                constants.append(_Empty(tuple(t.shape), tuple(t.stride()), t.dtype, str(t.device)))
            elif type(t) in (torch.Tensor, torch.nn.Parameter) and not (
                torch._is_functional_tensor(t) or torch._subclasses.fake_tensor.is_fake(t)
            ):
                constants.append(t)
            else:
                raise BypassAOTAutogradCache(f"coil: constant {k} is not a plain tensor")
        # A copy: the live recipe (shared with the compiled callable) keeps its tensors.
        self.recipe = dataclasses.replace(self.recipe, constants=constants)
        self.run = None  # rebuilt by post_compile after a hit

    def post_compile(self, example_inputs: Any, constants: Any, graph_kwargs: Any) -> None:
        constants = [c.tensor() if isinstance(c, _Empty) else c for c in self.recipe.constants]
        self.recipe = dataclasses.replace(self.recipe, constants=constants)
        self.run = boxed(rebuild(self.recipe))

    def set_triton_bundle(self, triton_bundle: Any) -> None:
        pass  # Triton's own disk cache holds coil's compiled kernels


def output_code(run: Callable[..., Any]) -> CoilOutputCode:
    """``run`` (a compiled graph, or the graph itself after an eager fallback) as a
    :class:`CoilOutputCode`, storable when it carries a recipe."""
    recipe = getattr(run, "coil_recipe", None)
    if recipe is not None and not recipe.tokens:
        return CoilOutputCode(recipe=recipe, run=boxed(run))
    if recipe is not None:
        # A hit's runtime wrappers hand the module its inputs without the token
        # slots a fresh compile gets (seen with linalg.inv's error check).
        why = "the graph has effectful ops (AOTAutograd's effect tokens)"
    elif isinstance(run, torch.fx.GraphModule):
        why = "the graph runs in eager PyTorch"
    elif hasattr(run, "coil_cpp"):
        why = "the C++ wrapper has its own build cache"
    else:
        why = "the pipeline stops before the host level"
    return CoilOutputCode(bypass=why, run=boxed(run))


def available() -> bool:
    """Whether this torch has what the cache relies on."""
    try:
        from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache
        from torch._functorch._aot_autograd.schemas import (  # noqa: F401 (must exist)
            SerializableAOTDispatchCompiler,
        )
    except ImportError:
        return False
    return (
        _output_code_base() is not object
        and hasattr(AOTAutogradCache, "_get_tmp_dir")
        and hasattr(torch._functorch.config, "bundled_autograd_cache")
        and hasattr(torch.compiler.config, "cache_key_tag")
    )


def serializable(compile_fn: Callable[..., Any]) -> Any:
    """``compile_fn`` as a compiler whose results AOTAutograd may cache."""
    from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler

    def compile_output_code(gm: torch.fx.GraphModule, inputs: list[Any]) -> CoilOutputCode:
        return output_code(compile_fn(gm, inputs))

    return SerializableAOTDispatchCompiler(CoilOutputCode, compile_output_code)


def bypass_reason(
    gm: torch.fx.GraphModule, training: bool, enabled: bool | None, dump_dir: object
) -> str | None:
    """Why the Dynamo graph ``gm`` does not go through the cache, or ``None``
    (``enabled`` and ``dump_dir`` as the graph cache takes them)."""
    from coil.runtime.graphcache import bypass_reason as graph_cache_bypass

    if (why := graph_cache_bypass(enabled, dump_dir=dump_dir)) is not None:
        return why
    if not config.aot_cache_enabled():
        return "disabled by COIL_AOT_CACHE=0"
    if not available():
        return "this torch has no bundled AOTAutograd cache"
    if training:
        return "a training graph (its backward compiles lazily, after the entry is made)"
    for node in gm.graph.find_nodes(op="get_attr"):
        attr = gm
        for part in str(node.target).split("."):
            attr = getattr(attr, part, None)
        if isinstance(attr, torch.Tensor):
            return f"the graph holds a tensor attribute ({node.target}; torch keys only its shape)"
    return None


def key_tag(pipeline: str, options: Mapping[str, Any]) -> str:
    """The part of the key torch does not know: coil's versions, the pipeline and
    the backend options that change the generated code."""
    from coil.runtime.graphcache import UNKEYED_OPTIONS, versions

    keyed = {k: repr(v) for k, v in sorted(options.items()) if k not in UNKEYED_OPTIONS}
    text = json.dumps({"versions": versions(), "pipeline": pipeline, "options": keyed})
    return "coil-" + hashlib.sha256(text.encode()).hexdigest()


_labels = itertools.count()


@dataclasses.dataclass
class AotCache:
    """The cache as one backend call (one Dynamo graph) uses it: ``pipeline`` and
    ``options`` enter the key; ``enabled`` and ``dump_dir`` as the graph cache
    takes them."""

    pipeline: str
    options: Mapping[str, Any]
    enabled: bool | None = None
    dump_dir: object = None
    label: str = dataclasses.field(default_factory=lambda: f"Dynamo graph {next(_labels)}")

    def admits(self, gm: torch.fx.GraphModule, training: bool) -> bool:
        """Whether ``gm`` goes through the cache (a bypass is logged with why not)."""
        why = bypass_reason(gm, training, self.enabled, self.dump_dir)
        if why is not None:
            log.info("coil: AOTAutograd cache bypass for %s: %s", self.label, why)
        return why is None

    def scope(
        self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]
    ) -> contextlib.AbstractContextManager[None]:
        tag = key_tag(self.pipeline, self.options) + alignment_tag(gm, example_inputs)
        tag += target_tag(gm, example_inputs, self.options)
        return scope(tag, self.label)


def target_tag(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: Mapping[str, Any]
) -> str:
    """The device the kernels are planned for (``coil.strategy.target``): torch's
    key knows the inputs' device type, not which GPU, so ``|target:<hash>``
    keeps an H100's entry from an A100."""
    from coil.strategy.target import resolve

    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    tensors += [*gm.parameters(), *gm.buffers()]
    device = str(tensors[0].device) if tensors else "cpu"
    target = resolve(str(options.get("target", "auto")), device)
    return "|target:" + hashlib.sha256(str(target).encode()).hexdigest()[:16]


def alignment_tag(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> str:
    """Which tensor inputs (and the graph's own parameters and buffers) start
    16-byte aligned in their storage. The module of a hit launches without
    checking the parameters that were aligned when it compiled (the importer's
    ``coil.aligned``), and torch's key leaves storage offsets out; so
    ``|align:1101`` keeps an entry from a process whose parameters were
    aligned away from one where one is not."""
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    tensors += [*gm.parameters(), *gm.buffers()]
    return "|align:" + "".join("1" if aligned_by_offset(t) else "0" for t in tensors)


def _prekey(gm: Any, example_inputs: Any, aot_config: Any, extra: Any) -> str:
    """What torch's AOTAutograd key depends on that can change coil's entry,
    hashed by torch's own cache pickler (see the module's docstring)."""
    import sys

    import triton
    from torch._functorch._aot_autograd.autograd_cache import (
        AOTAutogradCachePickler,
        sanitize_gm_for_cache,
    )

    gm = getattr(gm, "gm", gm)  # dynamo's GmWrapper
    _no_user_kernels(gm)
    autocast = {
        d: torch.get_autocast_dtype(d)
        for d in torch._C._autocast_supported_devices()
        if torch.is_autocast_enabled(d)
    }
    devices = sorted(
        {
            (str(t.device), torch.cuda.get_device_name(t.device))
            for t in example_inputs
            if isinstance(t, torch.Tensor) and t.device.type == "cuda"
        }
    )
    current = torch.cuda.current_device() if torch.cuda.is_initialized() else None
    state = (
        torch.__version__,
        torch.version.git_version,
        triton.__version__,
        sys.version,
        devices,
        current,  # where a graph without tensor inputs allocates
        torch.compiler.config.cache_key_tag,
        torch.is_grad_enabled(),
        autocast,
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.get_default_dtype(),
        torch._functorch.config.save_config_portable(),
        # Inductor's config, as torch's key has it: it holds settings AOTAutograd's
        # caching reads too (unsafe_marked_cacheable_functions' keys, freezing).
        torch._inductor.config.save_config_portable(
            ignore_private_configs=False, readonly_values=True
        ),
    )
    with sanitize_gm_for_cache(gm):
        pickler = AOTAutogradCachePickler(gm)
        return "coil-prekey-" + pickler.get_hash(
            (gm, list(example_inputs), aot_config, extra, state)
        )


def _no_user_kernels(gm: torch.fx.GraphModule) -> None:
    """Raise where ``gm`` calls user-defined Triton kernels: their sources are
    not in the graph's code (torch's key reads them from its side table), so
    a prekey would not see an edited kernel."""
    from torch._higher_order_ops.triton_kernel_wrap import (
        triton_kernel_wrapper_functional,
        triton_kernel_wrapper_mutation,
    )

    # torch.library.triton_op custom ops: torch's key hashes their kernels' sources
    kernels_of = getattr(getattr(torch._library, "triton", None), "get_triton_kernels_for_op", None)
    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for target in (triton_kernel_wrapper_functional, triton_kernel_wrapper_mutation):
            if module.graph.find_nodes(op="call_function", target=target):
                raise ValueError("the graph calls user-defined Triton kernels")
        for node in module.graph.nodes:
            ops = []
            if isinstance(node.target, torch._ops.OpOverload):
                ops = [node.target]
            elif isinstance(node.target, torch._ops.OpOverloadPacket):
                ops = [getattr(node.target, name) for name in node.target.overloads()]
            if kernels_of is None and any(op.namespace not in ("aten", "prims") for op in ops):
                raise ValueError("this torch cannot list a custom op's Triton kernels")
            if kernels_of is not None and any(list(kernels_of(op._name)) for op in ops):
                raise ValueError("the graph calls user-defined Triton kernels")


def _memo_key(original: Callable[..., Any], root: str) -> Callable[..., Any]:
    """torch's ``autograd_cache_key`` with its result remembered under ``root``
    by prekey: a later process with the same prekey gets the same key without
    computing it."""
    import os

    from torch._functorch._aot_autograd import autograd_cache
    from torch._inductor.codecache import write_atomic

    prefix = getattr(autograd_cache, "AOTAUTOGRAD_CACHE_PREFIX", "a")
    check = getattr(autograd_cache, "check_cacheable", lambda gm: None)

    def key(gm: Any, example_inputs: Any, aot_config: Any, *rest: Any, **kw: Any) -> Any:
        extra = rest[0] if rest else kw.get("compiler_config_extra", kw.get("fx_config"))
        try:
            path = os.path.join(root, "prekeys", _prekey(gm, example_inputs, aot_config, extra))
        except Exception as e:  # something torch's pickler cannot hash: torch's own key
            log.debug("coil: no AOTAutograd cache prekey (%s: %s)", type(e).__name__, e)
            return original(gm, example_inputs, aot_config, *rest, **kw)
        try:
            with open(path) as f:
                remembered = json.load(f)
            k = remembered["key"]
            ok = isinstance(k, str) and k.startswith(prefix) and k.isalnum()  # else damaged
        except (OSError, ValueError, KeyError, TypeError):
            ok = False  # none yet, or damaged: torch's key, remembered anew
        if ok:
            # What torch's key function checks before hashing (graph nodes it
            # cannot cache, the FX graph cache switched off, freezing) raises
            # its bypass here too.
            check(getattr(gm, "gm", gm))
            # in the shape torch's function returned it: (key, debug lines)
            return (k, []) if remembered["pair"] else k
        result = original(gm, example_inputs, aot_config, *rest, **kw)
        pair = isinstance(result, tuple)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_atomic(path, json.dumps({"key": result[0] if pair else result, "pair": pair}))
        except OSError as e:  # an unwritable cache: the next process computes it again
            log.debug("coil: AOTAutograd cache prekey not written (%s)", e)
        return result

    return key


@contextlib.contextmanager
def scope(tag: str, label: str) -> Iterator[None]:
    """AOTAutograd, inside, looks up and stores bundled entries under coil's cache
    directory with ``tag`` in the key; the outcome is logged for ``label``."""
    from unittest import mock

    from torch._dynamo.utils import counters
    from torch._functorch._aot_autograd import autograd_cache
    from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache

    root = str(config.cache_dir() / "aotautograd")
    user_tag = torch.compiler.config.cache_key_tag
    before = dict(counters["aot_autograd"])
    with (
        torch.compiler.config.patch(cache_key_tag=f"{user_tag}|{tag}" if user_tag else tag),
        torch._functorch.config.patch(bundled_autograd_cache=True),
        # torch's directory for these entries is fixed (its inductor cache dir);
        # coil's go where COIL_CACHE_DIR says, for this call only.
        mock.patch.object(AOTAutogradCache, "_get_tmp_dir", classmethod(lambda cls: root)),
        mock.patch.object(
            autograd_cache,
            "autograd_cache_key",
            _memo_key(autograd_cache.autograd_cache_key, root),
        ),
    ):
        yield
    delta = {k: v - before.get(k, 0) for k, v in counters["aot_autograd"].items()}
    if delta.get("autograd_cache_hit"):
        log.info("coil: AOTAutograd cache hit for %s (%s)", label, root)
    elif delta.get("autograd_cache_bypass"):
        log.info("coil: AOTAutograd cache bypass for %s (torch could not key or store it)", label)
    elif delta.get("autograd_cache_miss"):
        stored = "stored" if delta.get("autograd_cache_saved") else "not stored"
        log.info("coil: AOTAutograd cache miss for %s (%s)", label, stored)
