"""Command-line tools: ``fx-opt`` (the pass driver, like mlir-opt) and ``coil``.

``fx-opt`` is xDSL's ``xDSLOptMain`` with coil's dialects, passes, targets and
frontends registered through its ``register_all_*`` hooks; every failure the
user can cause (malformed IR, a verifier error, a bad pipeline, an unloadable
.pt2) ends in a located message on stderr and exit code 1, not a traceback.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
import traceback
from collections.abc import Sequence
from io import BytesIO
from typing import IO

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from coil import __version__, config

_EPILOG = "\0coil's passes, targets and pipelines\0"
"""Stands for the help's epilog until the help is printed (:class:`_HelpFormatter`)."""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written, and the epilog -- coil's passes with their
    options, read from the passes' sources (:func:`_coil_help`, ~1 s) -- built
    only when the help is printed, not on every start of fx-opt."""

    def add_text(self, text: str | None) -> None:
        super().add_text(_coil_help() if text == _EPILOG else text)


class FxOptMain(xDSLOptMain):
    version_format = "fx-opt (coil " + __version__ + ") on xDSL {xdsl_version}"

    @functools.cached_property
    def _multiverse(self):
        """xDSL's registries of the environment's ``xdsl.universe`` entry points,
        read once (each read scans every installed distribution's metadata)."""
        from xdsl.universe import Universe

        return Universe.get_multiverse()

    def register_all_dialects(self) -> None:
        # xDSL's dialects as super() registers them, except arith: coil's is
        # xDSL's with MLIR's elementwise tensor forms, which TTIR needs
        # (dialects/arith.py), and a name can be registered once.
        from coil.dialects import get_all_dialects

        for name, factory in self._multiverse.all_dialects.items():
            if name != "arith":
                self.ctx.register_dialect(name, factory)

        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        # xDSL's passes as super() registers them, from the one read of the
        # environment's registries.
        for name, factory in self._multiverse.all_passes.items():
            self.register_pass(name, factory)
        from coil.lowering import get_all_passes as lowering_passes
        from coil.transforms import get_all_passes as transform_passes

        for name, factory in {**transform_passes(), **lowering_passes()}.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        # mlir (the IR as text) and coil's targets; xDSL's others (arm-asm, csl,
        # wgsl ...) take dialects coil never produces.
        from coil.targets import get_all_targets

        self.available_targets["mlir"] = self._multiverse.all_targets["mlir"]
        self.available_targets.update(get_all_targets())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        # xDSL's arguments; the help lists coil's passes, targets and pipelines
        # (with one line each) instead of ~150 names of xDSL's; --help-all adds those.
        super().register_all_arguments(arg_parser)
        arg_parser.formatter_class = _HelpFormatter
        arg_parser.epilog = _EPILOG
        for action in arg_parser._actions:
            if action.dest == "passes":
                action.help = (
                    'pass pipeline, e.g. "canonicalize,cse" or "$(coil pipeline)"; '
                    "options in braces: convert-loop-to-tt{xblock=64 num-warps=4} (each "
                    "pass's options are listed below)"
                )
            elif action.dest == "target":
                action.help = "output: mlir (default) or a target listed below"
        from coil.strategy.target import TARGETS

        arg_parser.add_argument(
            "--device",
            choices=list(TARGETS),
            help="the device kernels are planned for (sets the module's coil.target; "
            "default: the input's coil.target, else h100 for CUDA tensors and "
            "cpu-interpreter for CPU ones). -t/--target names the output format",
        )
        arg_parser.add_argument(
            "--print-kernel-plans",
            action="store_true",
            help="print on stderr why each reduction is split or not "
            "(loop-split-reduction) and each kernel's plan and estimate "
            "(convert-loop-to-tt): their print-plans=true",
        )
        arg_parser.add_argument(
            "--pass-plugin",
            action="append",
            metavar="FILE.py",
            help="register the ModulePass classes FILE.py defines, for -p (repeatable)",
        )
        arg_parser.add_argument(
            "--help-all",
            nargs=0,
            action=_HelpAll,
            extra=lambda: _xdsl_help(self),
            help="show this help and every xDSL pass as well, then exit",
        )

    def setup_pipeline(self) -> None:
        # xDSL's, with every pass option checked (type, range, power of two):
        # the error names the pass, the option and the values it allows.
        from coil.pipeline import parse_pipeline

        for plugin in self.args.pass_plugin or []:  # passes under development
            from coil.tools.bisect import load_pass_plugin

            for name, factory in load_pass_plugin(plugin).items():
                self.available_passes[name] = factory

        if self.args.print_kernel_plans:
            from coil.pipeline import with_pass_option

            planners = ("loop-split-reduction", "convert-loop-to-tt")
            for name in planners:
                self.args.passes = with_pass_option(self.args.passes, name, "print-plans=true")
            if not re.search(rf"(?<![\w-])({'|'.join(planners)})(?![\w-])", self.args.passes):
                raise ValueError(
                    "--print-kernel-plans: the pipeline runs neither loop-split-reduction "
                    'nor convert-loop-to-tt, which print the plans; add -p "$(coil pipeline)"'
                )
        # xDSL's own parse (in its setup_pipeline) would refuse what ours
        # accepts (an integer for a float option): it runs on no passes, for
        # its callback (timing, verifying and printing between passes) only.
        passes, self.args.passes = self.args.passes, ""
        super().setup_pipeline()
        self.args.passes = passes
        self.pipeline = parse_pipeline(passes, self.available_passes, self.pipeline.callback)

    def apply_passes(self, prog) -> None:
        # --device: the target the passes plan for, set on the parsed module
        # (xDSL's run loop has no other hook between parsing and the passes).
        if self.args.device:
            from coil.strategy.target import named, set_module_target

            set_module_target(prog, named(self.args.device))
        super().apply_passes(prog)

    # Input: ``-`` is standard input, as for mlir-opt and xdsl-opt (xDSL reads
    # stdin only when no file is named). These two are CommandLineTool's input
    # hooks; overriding them is the only way to give ``-`` that meaning.
    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == "-":
            return sys.stdin.buffer, "mlir"
        stream, extension = super().get_input_stream()
        if not self.args.frontend and extension not in self.available_frontends:
            stream.close()
            what = f"unrecognized file extension '.{extension}'" if extension else "no extension"
            raise ValueError(
                f"{self.get_input_name()}: {what}: fx-opt reads .mlir (MLIR text) and .pt2 "
                "(torch.export archives); -f mlir reads any file as MLIR text"
            )
        return stream, extension

    def get_input_name(self) -> str:
        return "stdin" if self.args.input_file == "-" else super().get_input_name()

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        parse_mlir = self.available_frontends["mlir"]

        def parse_text(io: IO[bytes]):
            # MLIR is text: a binary file is named, not a bare codec error.
            data = io.read()
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DiagnosticException(
                    f"{self.get_input_name()}: not a text file (byte 0x{data[e.start]:02x} at "
                    f"offset {e.start} is not UTF-8); fx-opt reads MLIR text, and .pt2 "
                    "archives by their extension"
                ) from None
            if self.args.verify_diagnostics:  # xDSL's own report, as the lit tests expect
                return parse_mlir(BytesIO(data))
            return parse_located(
                self.ctx, data.decode(), self.get_input_name(), not self.args.no_implicit_module
            )

        self.available_frontends["mlir"] = parse_text

        def load_pt2(io: IO[bytes]):
            from coil.frontend.export import load_exported_program

            return load_exported_program(io, self.get_input_name())

        self.available_frontends["pt2"] = load_pt2


def _unknown_aten_op_hint(ctx, name: str) -> str:
    """For an op name of the aten or prims dialect that is not one of the
    generated ops: the closest ones (a misspelled op or overload), else how to
    write an overload outside the generated set."""
    import difflib

    namespace, _, overload = name.partition(".")
    dialect = ctx.get_optional_dialect(namespace) if namespace in ("aten", "prims") else None
    if dialect is None or not overload:
        return ""
    by_op: dict[str, list[str]] = {}
    for op in dialect.operations:
        by_op.setdefault(op.name.split(".")[1], []).append(op.name)
    op_name = overload.split(".")[0]
    close = [
        full
        for near in difflib.get_close_matches(op_name, list(by_op), n=2, cutoff=0.8)
        for full in difflib.get_close_matches(name, by_op[near], n=2, cutoff=0)
    ]
    if close:
        return f"did you mean {' or '.join(close[:3])}?"
    return (
        "an overload outside the generated set is written "
        f'aten.operator "{namespace}::{overload}"(...)'
    )


def parse_located(ctx, text: str, name: str, implicit_module: bool = True):
    """Parse and verify ``text``; an op that does not verify is a located error
    (``file:line:col``, the line, a caret) like a parse error, rather than
    xDSL's message with no position (``func.return`` typed unlike its function)."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import VerifyException
    from xdsl.utils.mlir_lexer import MLIRTokenKind

    class LocatingParser(Parser):
        """Remembers where each op's text starts."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.spans: dict = {}

        def parse_operation(self):
            span = self._current_token.span
            op = super().parse_operation()
            self.spans[op] = span
            return op

        def _get_op_by_name(self, name: str):
            try:
                return super()._get_op_by_name(name)
            except ParseError as e:
                hint = _unknown_aten_op_hint(self.ctx, name)
                if not hint:
                    raise
                raise ParseError(e.span, f"{e.msg}; {hint}") from None

        def parse_module(self, allow_implicit_module: bool = True):
            # Nothing but whitespace and comments is an empty module, as
            # mlir-opt takes it (xDSL's parser wants at least one op).
            if allow_implicit_module and self._current_token.kind == MLIRTokenKind.EOF:
                return ModuleOp([])
            return super().parse_module(allow_implicit_module)

    parser = LocatingParser(ctx, text, name)
    module = parser.parse_module(implicit_module)

    def verify(op) -> None:  # nested ops first, as Operation.verify checks them
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    verify(inner)
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            span = parser.spans.get(op)
            if span is None:
                raise
            message = str(e)
            if not message.startswith(op.name):
                message = f"{op.name}: {message}"
            raise ParseError(span, message) from None

    verify(module)
    return module


def _table(rows: dict[str, str]) -> str:
    width = max(map(len, rows), default=0) + 2
    return "\n".join(f"  {name.ljust(width)}{text}" for name, text in rows.items())


def _first_sentence(text: str) -> str:
    import re

    text = text.replace("``", "")  # reST literals read as plain text in a terminal
    match = re.search(r"\.\s+(?=[A-Z(])", text)
    return text[: match.start() + 1] if match else text


def _options_help(path: str, pass_name: str) -> list[str]:
    """One entry per option of the pass at ``path``, as mlir-opt lists them:
    ``name=<type>``, the default, what it does and the values it allows."""
    import textwrap

    from coil.passinfo import NO_DEFAULT, pass_options, spec_value
    from coil.pipeline import OPTION_RULES

    types = {"int": "int", "bool": "bool", "str": "string", "tuple[str, ...]": "list"}
    rules = OPTION_RULES.get(pass_name, {})
    lines = []
    for option in pass_options(path):
        rule = rules.get(option.name.replace("-", "_"))
        kind = "|".join(rule.choices) if rule and rule.choices else types.get(option.type)
        head = f"{option.name}=<{kind or option.type}>"
        default = option.default
        if isinstance(default, tuple) and len(default) > 3:
            shown = f"{', '.join(map(str, default[:2]))}, ... ({len(default)} in all)"
        else:
            shown = "none" if default is NO_DEFAULT else spec_value(default)
        text = f"(default {shown}) {_first_sentence(option.doc)}".rstrip()
        if rule is not None and not rule.choices:
            text += f" Allowed: {rule.allowed}."
        lines.append(
            textwrap.fill(
                f"{head:<28} {text}",
                width=100,
                initial_indent="      ",
                subsequent_indent=" " * 35,
                break_on_hyphens=False,
            )
        )
    return lines


def _passes_help() -> str:
    """coil's passes, each with its summary and then its options."""
    from coil.lowering import PASSES as lowering_paths
    from coil.lowering import SUMMARIES as lowerings
    from coil.transforms import PASSES as transform_paths
    from coil.transforms import SUMMARIES as transforms

    paths = {**transform_paths, **lowering_paths}
    summaries = {**transforms, **lowerings}
    width = max(map(len, summaries)) + 2
    lines = []
    for name, summary in summaries.items():
        lines.append(f"  {name.ljust(width)}{summary}")
        lines.extend(_options_help(paths[name], name))
    return "\n".join(lines)


def _coil_help() -> str:
    from coil.pipeline import SUMMARIES as pipelines
    from coil.pipeline import XDSL_PASSES_USED
    from coil.targets import SUMMARIES as targets

    return "\n\n".join(
        [
            "coil passes (-p NAME or NAME{option=value ...}) and their options:\n" + _passes_help(),
            "xDSL passes in coil's pipelines:\n" + _table(XDSL_PASSES_USED),
            "targets (-t):\n" + _table({"mlir": "the IR as text (default)", **targets}),
            'pipelines (-p "$(coil pipeline NAME)"):\n' + _table(pipelines),
            "--help-all lists xDSL's other passes as well.",
        ]
    )


def _xdsl_help(main: FxOptMain) -> str:
    from coil.lowering import SUMMARIES as lowerings
    from coil.pipeline import XDSL_PASSES_USED
    from coil.transforms import SUMMARIES as transforms

    ours = {*transforms, *lowerings, *XDSL_PASSES_USED}
    passes = [p for p in main.available_passes if p not in ours]
    return f"other xDSL passes ({len(passes)}):\n  " + "\n  ".join(sorted(passes)) + "\n"


class _HelpAll(argparse.Action):
    """``--help-all``: the help, then xDSL's other passes and targets."""

    def __init__(self, *args, extra, **kwargs):
        self.extra = extra
        super().__init__(*args, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.print_help()
        print("\n" + self.extra())
        parser.exit()


def _fail(message: str) -> int:
    print(message.rstrip(), file=sys.stderr)
    return 1


def fx_opt_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``fx-opt``: a located message (``file:line:col``) for an
    error in the input, one ``fx-opt: error: ...`` sentence for anything else,
    exit code 1, and no traceback (``COIL_TRACEBACK=1`` prints it)."""

    def error(message: str) -> int:
        return _fail(f"fx-opt: error: {message}")

    try:
        FxOptMain(description="coil's pass driver (mlir-opt for coil IR)", args=argv).run()
    except ParseError as e:
        return _fail(str(e))
    except ArgSpecParseError as e:  # a BaseException in xDSL: catch it by name
        return error(f"invalid pass pipeline: {e}")
    except DiagnosticException as e:
        return error(str(e))
    except BrokenPipeError:  # the reader (head, less) closed the pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except FileNotFoundError as e:
        return error(f"{e.filename}: no such file or directory")
    except IsADirectoryError as e:
        return error(f"{e.filename}: is a directory, not a file")
    except PermissionError as e:
        return error(f"{e.filename}: permission denied")
    except ValueError as e:  # e.g. unknown file extension, unknown pass name
        return error(str(e))
    except Exception as e:  # never a raw traceback for the user
        if config.traceback():
            traceback.print_exc()
        return error(f"{type(e).__name__}: {e}\n(set COIL_TRACEBACK=1 for the Python traceback)")
    return 0


# --------------------------------------------------------------------------
# coil
# --------------------------------------------------------------------------


def _cmd_import(args: argparse.Namespace) -> int:
    from coil.frontend.loader import load_program
    from coil.ir import print_module

    if args.dynamic and args.file.endswith(".pt2"):
        return _fail(
            f"coil import: error: {args.file}: --dynamic traces a .py model file; a .pt2 "
            "archive has the shapes it was exported with (torch.export's dynamic_shapes)"
        )
    module = load_program(args.file, dynamic=args.dynamic)
    sys.stdout.write(print_module(module, debuginfo=args.debuginfo))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from coil.demo import run_demo

    return run_demo(verbose=not args.quiet)


def _cmd_pipeline(args: argparse.Namespace) -> int:
    from coil.pipeline import PIPELINES

    print(PIPELINES[args.name])
    return 0


def _cmd_bisect(args: argparse.Namespace) -> int:
    from pathlib import Path

    from coil.frontend.loader import load_model_file
    from coil.tools.bisect import bisect, load_pass_plugin, write_culprit

    path = Path(args.file)
    if path.suffix != ".py":
        what = "an IR file" if path.suffix == ".mlir" else "not one"
        hint = " (coil reduce and fx-opt take .mlir files)" if path.suffix == ".mlir" else ""
        return _fail(
            f"coil bisect: error: {path}: coil bisect takes a Python model file, a .py "
            f"defining `model` and `example_inputs`; this is {what}{hint}"
        )
    passes = {}
    for plugin in args.pass_plugin or []:
        passes.update(load_pass_plugin(plugin))
    model, inputs, dynamic = load_model_file(path)
    reports = bisect(model, inputs, args.pipeline, dynamic=dynamic or args.dynamic, passes=passes)
    if not reports:
        print("coil bisect: torch.compile made no graph of this model")
        return 0
    found = False
    for report in reports:
        print(report.render())
        if report.culprit is not None:
            found = True
            for line in write_culprit(report, Path(args.out), args.pass_plugin or []):
                print(line)
    return 1 if found else 0


def _cmd_reduce(args: argparse.Namespace) -> int:
    from pathlib import Path

    from coil.tools.reduce import command_words, reduce_file

    if not args.command_words:
        return _fail("coil reduce: error: give the command that fails, e.g. fx-opt -p PASSES")
    before = Path(args.file).read_text()
    if args.output and not Path(args.output).resolve().parent.is_dir():
        # Say so now, not after the reduction's many runs.
        raise FileNotFoundError(2, "no such directory", args.output)

    def log(line: str) -> None:
        if not args.quiet:
            print(f"coil reduce: {line}", file=sys.stderr)

    reduced, _ = reduce_file(args.file, command_words(args.command_words), args.match, log)
    reduced = reduced if reduced.endswith("\n") else reduced + "\n"
    if args.output:
        Path(args.output).write_text(reduced)
    else:
        sys.stdout.write(reduced)
    log(f"{len(before.splitlines())} lines -> {len(reduced.splitlines())}")
    return 0


def coil_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``coil``."""
    parser = argparse.ArgumentParser(
        prog="coil", description="coil: a torch.compile backend and MLIR-style compiler on xDSL"
    )
    parser.add_argument("--version", action="version", version=f"coil {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("import", help="print the aten IR of a model file (.py or .pt2)")
    p.add_argument("file", help="a .py defining `model` and `example_inputs`, or a .pt2 archive")
    p.add_argument("--dynamic", action="store_true", help="trace with symbolic sizes (.py)")
    p.add_argument("--debuginfo", action="store_true", help="print source locations")
    p.set_defaults(run=_cmd_import)

    p = sub.add_parser(
        "demo",
        help="import the built-in examples and check them against eager",
        description="Compile the built-in examples (an MLP block and a softmax) with the coil "
        "backend down to Triton kernels and a Python wrapper, print each stage, run them (on "
        "the GPU, else the CPU under Triton's interpreter) and compare with eager PyTorch; "
        "exit 1 if one differs.",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    p.set_defaults(run=_cmd_demo)

    from coil.pipeline import PIPELINES
    from coil.pipeline import SUMMARIES as PIPELINE_SUMMARIES

    p = sub.add_parser(
        "pipeline",
        help="print a named pass pipeline (for fx-opt -p)",
        description='Print a pipeline as a pass-pipeline string: fx-opt -p "$(coil pipeline '
        'NAME)" replays it.\n\npipelines:\n' + _table(PIPELINE_SUMMARIES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "name",
        nargs="?",
        default="default",
        choices=sorted(PIPELINES),
        metavar="NAME",
        help="one of the pipelines above (default: default, what the backend runs)",
    )
    p.set_defaults(run=_cmd_pipeline)

    p = sub.add_parser(
        "bisect",
        help="run a model through the pipeline pass by pass; name the first pass whose "
        "output differs from eager",
    )
    p.add_argument("file", help="a .py defining `model` and `example_inputs`")
    p.add_argument("-p", "--pipeline", help="the passes to bisect (default: coil pipeline)")
    p.add_argument("--dynamic", action="store_true", help="trace with symbolic sizes")
    p.add_argument(
        "--pass-plugin",
        action="append",
        metavar="FILE.py",
        help="register the ModulePass classes FILE.py defines (repeatable)",
    )
    p.add_argument(
        "-o", "--out", default="coil-bisect", help="where the culprit's IR goes (coil-bisect/)"
    )
    p.set_defaults(run=_cmd_bisect)

    p = sub.add_parser(
        "reduce",
        help="shrink a .mlir input to a small one that still fails a command",
        description="Delta reduction at the IR level: cut functions, returned values and "
        "ops (their results read later become function arguments) while the command still "
        "fails the same way. Options go before FILE; the command after it gets the "
        "candidate's path appended (or in place of {}).",
    )
    p.add_argument("-o", "--output", help="write the reduced IR here (default: stdout)")
    p.add_argument(
        "--match",
        help="a regular expression the failing output must match (default: its last line, "
        "numbers and SSA names as wildcards)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("file", help="the .mlir input that fails")
    p.add_argument(
        "command_words", nargs=argparse.REMAINDER, metavar="COMMAND", help="e.g. fx-opt -p PASSES"
    )
    p.set_defaults(run=_cmd_reduce)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except FileNotFoundError as e:
        return _fail(f"coil {args.command}: error: {e.filename}: no such file or directory")
    except IsADirectoryError as e:
        return _fail(f"coil {args.command}: error: {e.filename}: is a directory, not a file")
    except PermissionError as e:
        return _fail(f"coil {args.command}: error: {e.filename}: permission denied")
    except Exception as e:  # a sentence, not a traceback
        if config.traceback():
            traceback.print_exc()
        return _fail(f"coil {args.command}: error: {e}")


if __name__ == "__main__":
    sys.exit(coil_main())
