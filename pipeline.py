"""Named pass pipelines, as data: each is a string ``fx-opt -p`` accepts.

``coil pipeline [NAME]`` prints one; the torch.compile backend runs
``PIPELINES["default"]`` unchanged, so ``fx-opt x.mlir -p "$(coil pipeline)"``
replays exactly what the backend did (``-t python`` then emits the module the
backend loads). The named prefixes (aten, loop, buffer) stop at a level.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType

from coil.passinfo import (  # noqa: F401  (re-exported: the options are pipeline API)
    OPTION_RULES,
    OptionRule,
    PassOptionError,
    check_options,
    int_range,
    one_of,
    pow2_or_zero,
)

ATEN_CLEANUP = "canonicalize,cse,dce"
ATEN = (
    f"canonicalize,aten-fuse-attention,aten-decompose,{ATEN_CLEANUP},"
    "aten-peel-conv-bias,aten-fuse-matvec,aten-cpu-packed-linear,aten-channels-last,"
    "aten-reorder-collectives"
)
LOOP = (
    "convert-aten-to-loop,loop-inline,loop-matvec-prologue,cse,loop-split-reduction,"
    "loop-fuse,loop-simplify-indexing,cse,dce"
)
BUFFER = "bufferize,buffer-hoist-constants,buffer-fold-concat,buffer-reorder,memory-plan"
BACKEND = (
    "convert-decode-attention-to-tt,convert-loop-to-tt,host-combine-launches,convert-buffer-to-host"
)
SHARDED_COLLECTIVES = "aten-bucket-collectives{bucket-mb=128},aten-reorder-collectives{prefetch=1}"

PIPELINES: dict[str, str] = {
    # aten: fold no-ops and view chains, decompose composites, clean up, peel
    # CUDA convolution biases, run convolutions channels-last where Inductor's
    # rules say it pays (inference graphs: the backend sets inference=true),
    # and schedule collectives early and their waits late (overlap);
    # loop: lower to loop nests, fuse, simplify index math, clean up bodies;
    # buffer: give what must exist in memory a buffer, compute what reads only
    # parameters once per parameter version (inference graphs: the backend
    # sets inference=true), write a concatenation's stored inputs into its
    # slices, order kernels for a lower peak where one is found, plan reuse;
    # backend: each nest becomes a Triton kernel (tt), independent elementwise
    # kernels in a row run as one launch, the rest becomes the wrapper (host).
    # `-t python` then emits the module the torch.compile backend loads.
    "default": f"{ATEN},{LOOP},{BUFFER},{BACKEND}",
    "aten": ATEN,
    "aten-cleanup": ATEN_CLEANUP,
    "loop": f"{ATEN},{LOOP}",
    # The middle end alone: what the reference executor runs pass by pass.
    "buffer": f"{ATEN},{LOOP},{BUFFER}",
    # Traced sharding (shard_parameters, SimpleFSDP): the default with each
    # run of all-gathers / reduce-scatters bucketed into one collective and
    # the next bucket's all-gather prefetched while this one's compute runs.
    "sharded": (
        f"{ATEN.replace('aten-reorder-collectives', SHARDED_COLLECTIVES)},{LOOP},{BUFFER},{BACKEND}"
    ),
    # What the backend runs for graphs on the CPU (options cpu_kernels='cpp', the
    # default): the nests become C++ kernels (cpu.func), any the C++ printer
    # cannot write stay Triton kernels.
    "cpu": f"{ATEN},{LOOP},{BUFFER},convert-loop-to-cpp,{BACKEND}",
}


SUMMARIES: dict[str, str] = {
    "default": "what the torch.compile backend runs: aten, loop, buffer, then tt + host",
    "aten": "fold no-ops and view chains, decompose, clean up, conv layouts, overlap collectives",
    "aten-cleanup": "canonicalize, cse, dce",
    "loop": "aten, then lower to loop nests, fuse, simplify index math",
    "buffer": "loop, then bufferize and plan memory (the middle end)",
    "sharded": "default, collectives bucketed and prefetched one bucket ahead (traced FSDP)",
    "cpu": "default, with CPU nests as C++ kernels (cpu.func) before convert-loop-to-tt",
}
"""One line per named pipeline (``coil pipeline NAME``), for ``fx-opt --help``."""

XDSL_PASSES_USED: dict[str, str] = {
    "cse": "common subexpression elimination (xDSL)",
    "dce": "dead code elimination (xDSL)",
}
"""xDSL passes coil's pipelines use, listed with coil's own in ``fx-opt --help``."""


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass a pipeline may name: xDSL's, coil's transforms and lowerings."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    from coil.lowering import get_all_passes as lowering_passes
    from coil.transforms import get_all_passes as transform_passes

    return {**xdsl_passes(), **transform_passes(), **lowering_passes()}


# --------------------------------------------------------------------------
# Pass options: types and allowed values, checked where a pipeline is built
# --------------------------------------------------------------------------


class PipelineSyntaxError(ValueError):
    """A pipeline string that does not parse (the message shows where)."""


class UnknownPassError(ValueError):
    """A pipeline names a pass nobody registered (names it and the known ones)."""


def _coil_pass_names() -> list[str]:
    from coil.lowering import SUMMARIES as lowerings
    from coil.transforms import SUMMARIES as transforms

    return [*transforms, *lowerings, *XDSL_PASSES_USED]


def unknown_name(
    kind: str, name: str, known: Sequence[str], listed: Sequence[str], what: str, note: str = ""
) -> str:
    """``unknown KIND 'NAME'; did you mean 'X'? (WHAT, closest first: ...; NOTE)``:
    the registered names (``known``) close to ``name`` (difflib), then ``listed``
    ordered by closeness. The one wording for a misspelled pass, pass option and
    backend option."""
    import difflib

    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    text = f"unknown {kind} '{name}'"
    if close:
        text += "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"

    def distance(candidate: str) -> float:
        return -difflib.SequenceMatcher(None, name, candidate).ratio()

    listing = ", ".join(sorted(listed, key=distance))
    return f"{text} ({what}, closest first: {listing}{'; ' + note if note else ''})"


def unknown_pass_message(name: str, known: Sequence[str]) -> str:
    """A pipeline's misspelled pass: coil's passes (and the xDSL ones its pipelines
    use) are listed; xDSL's other passes are accepted but not listed."""
    ours = [p for p in _coil_pass_names() if p in known]
    note = "fx-opt --help-all lists xDSL's others"
    return unknown_name("pass", name, known, ours, "coil's passes", note)


def _option(name: str) -> str:
    return name.replace("_", "-")


def _type_words(hint: Any) -> str:
    import typing

    if hint is bool:
        return "true or false"
    if hint is int:
        return "an integer"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is tuple and args:
        return f"a comma-separated list ({_type_words(args[0])} each)"
    if args:
        return " or ".join(_type_words(a) for a in args)
    return str(hint)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _spec_text(values: tuple) -> str:
    return ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in values)


def pass_from_spec(cls: type[ModulePass], spec: Any) -> ModulePass:
    """``cls.from_spec(spec)`` with each option's type checked first, so an error
    names the pass, the option and the values it allows."""
    import dataclasses
    import typing

    from xdsl.utils.arg_spec import _convert_arg_to_type

    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"]
    for given, values in spec.parameters.items():
        field_name = given.replace("-", "_")
        if field_name not in fields:
            options = [_option(f) for f in fields]
            if not options:
                raise PassOptionError(f"{cls.name}: unknown option '{given}' (it takes none)")
            raise PassOptionError(
                f"{cls.name}: " + unknown_name("option", given, options, options, "its options")
            )
        if hints[field_name] is float and any(_is_int(v) for v in values):
            # "recompute-margin=4": an integer is a number (xDSL's check wants 4.0)
            values = type(values)(float(v) if _is_int(v) else v for v in values)
            spec.parameters[given] = values
        try:
            _convert_arg_to_type(values, hints[field_name])
        except ValueError:
            rule = OPTION_RULES.get(cls.name, {}).get(field_name)
            allowed = _type_words(hints[field_name])
            if rule is not None:  # "an integer >= 2" says the type already
                words = allowed.removeprefix("an ").removeprefix("a ")
                allowed = rule.allowed if words in rule.allowed else f"{allowed}: {rule.allowed}"
            raise PassOptionError(
                f"{cls.name}: option '{_option(field_name)}' must be {allowed}; "
                f"got {_spec_text(values) or 'no value'}"
            ) from None
    p = cls.from_spec(spec)
    check_options(p)
    return p


def with_pass_option(pipeline: str, name: str, option: str) -> str:
    """``pipeline`` with ``option`` ("key=value") added to every ``name`` pass in
    it (inside its braces, where it has options; a key already given is left)."""

    key = option.split("=", 1)[0]

    def add(m: re.Match) -> str:
        braces = m.group(2)
        if braces is None:
            return f"{m.group(1)}{{{option}}}"
        inside = braces[1:-1]
        if re.search(rf"(?<![\w-]){re.escape(key)}\s*=", inside):
            return m.group(0)
        joined = f"{inside} {option}" if inside.strip() else option
        return f"{m.group(1)}{{{joined}}}"

    return re.sub(rf"(?<![\w-])({re.escape(name)})(\{{[^}}]*\}})?(?=,|$)", add, pipeline)


def without_pass_option(pipeline: str, name: str, key: str) -> str:
    """``pipeline`` with the option ``key`` of every ``name`` pass removed (its
    braces too when nothing else is left in them)."""
    import re

    def drop(m: re.Match) -> str:
        braces = m.group(2)
        if braces is None:
            return m.group(0)
        inside = re.sub(rf'(?<![\w-]){re.escape(key)}\s*=\s*("[^"]*"|[^\s}}]*)', "", braces[1:-1])
        inside = " ".join(inside.split())
        return f"{m.group(1)}{{{inside}}}" if inside else m.group(1)

    return re.sub(rf"(?<![\w-])({re.escape(name)})(\{{[^}}]*\}})?(?=,|$)", drop, pipeline)


def parse_pipeline(
    text: str,
    passes: dict[str, Callable[[], type[ModulePass]]] | None = None,
    callback: PassPipelineCallbackType | None = None,
) -> PassPipeline:
    """``PassPipeline.parse_spec`` with every option checked (:func:`pass_from_spec`):
    what ``fx-opt -p`` and the backend's ``pipeline`` option go through."""
    from xdsl.utils.arg_spec import parse_pipeline as parse_specs
    from xdsl.utils.exceptions import ArgSpecParseError

    passes = available_passes() if passes is None else passes
    try:
        specs = tuple(parse_specs(text))
    except ArgSpecParseError as e:  # a BaseException in xDSL: make it an error
        message = f"invalid pass pipeline: {e}"
        where = re.search(r"pass-pipeline:\d+:(\d+)", message)
        before = text[: int(where.group(1)) - 1] if where else ""
        # xDSL's word for the dot of `ops=aten.mm.default`: inside a pass's braces
        if "Unknown token" in message and before.count("{") > before.count("}"):
            message += (
                "\n(a value with dots, colons or spaces goes in double quotes: "
                'aten-decompose{ops="aten._softmax.default"})'
            )
        raise PipelineSyntaxError(message) from None
    for spec in specs:
        if spec.name not in passes:
            raise UnknownPassError(unknown_pass_message(spec.name, list(passes)))
    return PassPipeline(tuple(pass_from_spec(passes[s.name](), s) for s in specs), callback)
