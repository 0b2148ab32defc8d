"""``coil reduce``: shrink a ``.mlir`` input to a small one that still fails.

Like ``mlir-reduce`` (and creduce's delta debugging, at the IR level rather
than on characters): the input is parsed once and candidates are made by
cutting the IR, each written out and handed to the command under test. A
candidate is *interesting* when the command exits non-zero and its output
(stdout and stderr) matches ``--match`` -- by default the last line of the
original failure's output, with numbers and SSA names as wildcards, so a
candidate that fails for another reason (IR the cut made invalid) does not
count. What is cut, in rounds until nothing more can go:

* whole functions (``func.func``, ``tt.func``, ``host.func``);
* the values a function returns (its type follows);
* ops at the top level of a function body, in halves, quarters ... down to
  single ops (ddmin): the results of a cut op that later ops still read
  become new function arguments of the same type, as ``mlir-reduce``'s
  operation-to-argument reduction does, so every candidate is valid IR;
* function arguments nothing reads.

The command is a shell command line; ``{}`` in it is replaced by the
candidate's path, else the path is appended (``fx-opt -p 'a,b'`` becomes
``fx-opt -p 'a,b' /tmp/.../candidate.mlir``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp
from xdsl.ir import Operation
from xdsl.traits import IsTerminator


@dataclass
class Outcome:
    code: int
    output: str


def run_command(command: str, path: Path, timeout: float = 300) -> Outcome:
    """Run the command under test on ``path``."""
    line = (
        command.replace("{}", shlex.quote(str(path)))
        if "{}" in command
        else (f"{command} {shlex.quote(str(path))}")
    )
    try:
        done = subprocess.run(
            line, shell=True, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return Outcome(124, "timed out")
    return Outcome(done.returncode, done.stdout + done.stderr)


def failure_pattern(output: str) -> str:
    """A regular expression for "the same failure": the output's last non-empty
    line, with numbers and SSA value names as wildcards (cutting the IR renumbers
    them) and file paths dropped."""
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    last = lines[-1]
    last = re.sub(r"\S+\.mlir(:\d+)*", "\0FILE\0", last)
    pattern = re.escape(last)
    pattern = pattern.replace(re.escape("\0FILE\0"), r"\S*")
    pattern = re.sub(r"%(\\[.]|\w)+", r"%[\\w.]+", pattern)  # %name, %0, %x_1
    pattern = re.sub(r"\d+", r"\\d+", pattern)
    return pattern


def _functions(module: ModuleOp) -> list[Operation]:
    return [op for op in module.ops if "function_type" in op.properties and op.regions]


def _body_ops(fn: Operation) -> list[Operation]:
    block = fn.regions[0].blocks.first
    if block is None:
        return []
    return [op for op in block.ops if not op.has_trait(IsTerminator)]


def _set_inputs(fn: Operation) -> None:
    block = fn.regions[0].blocks.first
    ftype = fn.properties["function_type"]
    fn.properties["function_type"] = FunctionType.from_lists(
        list(block.arg_types), list(ftype.outputs.data)
    )
    attrs = fn.properties.get("arg_attrs")
    if isinstance(attrs, ArrayAttr):
        have = list(attrs.data)
        have += [DictionaryAttr({})] * (len(block.args) - len(have))
        fn.properties["arg_attrs"] = ArrayAttr(have[: len(block.args)])


def cut_ops(module: ModuleOp, fn_index: int, indices: set[int]) -> None:
    """Erase the top-level ops ``indices`` of function ``fn_index``; results
    still read become new arguments of the function."""
    fn = _functions(module)[fn_index]
    ops = _body_ops(fn)
    block = fn.regions[0].blocks.first
    for k in sorted(indices, reverse=True):
        op = ops[k]
        for result in op.results:
            if result.uses:
                arg = block.insert_arg(result.type, len(block.args))
                arg.name_hint = result.name_hint
                result.replace_all_uses_with(arg)
        op.detach()
        op.erase()
    _set_inputs(fn)


def cut_results(module: ModuleOp, fn_index: int, indices: set[int]) -> None:
    """Return fewer values from function ``fn_index``."""
    fn = _functions(module)[fn_index]
    block = fn.regions[0].blocks.first
    ret = block.last_op
    keep = [v for k, v in enumerate(ret.operands) if k not in indices]
    ret.operands = keep
    ftype = fn.properties["function_type"]
    fn.properties["function_type"] = FunctionType.from_lists(
        list(ftype.inputs.data), [v.type for v in keep]
    )
    attrs = fn.properties.get("res_attrs")
    if isinstance(attrs, ArrayAttr):
        fn.properties["res_attrs"] = ArrayAttr(
            [a for k, a in enumerate(attrs.data) if k not in indices]
        )


def cut_unused_args(module: ModuleOp, fn_index: int) -> bool:
    """Drop the arguments nothing reads; whether there were any."""
    fn = _functions(module)[fn_index]
    block = fn.regions[0].blocks.first
    unused = [a for a in block.args if not a.uses]
    if not unused:
        return False
    attrs = fn.properties.get("arg_attrs")
    kept_attrs = (
        [a for arg, a in zip(block.args, attrs.data) if arg.uses]
        if isinstance(attrs, ArrayAttr)
        else None
    )
    for arg in reversed(unused):
        block.erase_arg(arg)
    if kept_attrs is not None:
        fn.properties["arg_attrs"] = ArrayAttr(kept_attrs)
    _set_inputs(fn)
    return True


def _chunks(n: int) -> Iterator[set[int]]:
    """ddmin's subsets of range(n): halves, then quarters ... then single items
    (last items first: later ops are read by fewer others)."""
    size = max(1, n // 2)
    while True:
        starts = list(range(0, n, size))
        for start in reversed(starts):
            yield set(range(start, min(n, start + size)))
        if size == 1:
            return
        size = max(1, size // 2)


class Reducer:
    """Shrinks ``text`` while ``interesting(candidate_text)`` holds."""

    def __init__(
        self,
        text: str,
        interesting: Callable[[str], bool],
        parse: Callable[[str], ModuleOp],
        show: Callable[[ModuleOp], str],
        log: Callable[[str], None] = lambda s: None,
    ) -> None:
        self.text = text
        self.interesting = interesting
        self.parse = parse
        self.show = show
        self.log = log
        self.tries = 0

    def _try(self, edit: Callable[[ModuleOp], None]) -> bool:
        module = self.parse(self.text)
        try:
            edit(module)
            module.verify()
            candidate = self.show(module)
        except Exception:  # the cut made IR this reducer cannot print: not a candidate
            return False
        if candidate == self.text:
            return False
        self.tries += 1
        if self.interesting(candidate):
            self.text = candidate
            return True
        return False

    def _ddmin(self, count: Callable[[], int], edit: Callable[[ModuleOp, set[int]], None]) -> bool:
        progress = False
        n = count()
        again = True
        while again and n:
            again = False
            for subset in _chunks(n):
                if self._try(lambda m, s=subset: edit(m, s)):
                    progress = again = True
                    n = count()
                    break
        return progress

    def reduce(self) -> str:
        while True:
            progress = False
            # Whole functions.
            progress |= self._ddmin(
                lambda: len(_functions(self.parse(self.text))),
                lambda m, s: _cut_functions(m, s),
            )
            for f in range(len(_functions(self.parse(self.text)))):

                def n_results(f: int = f) -> int:
                    fns = _functions(self.parse(self.text))
                    return (
                        len(fns[f].regions[0].blocks.first.last_op.operands) if f < len(fns) else 0
                    )

                def n_ops(f: int = f) -> int:
                    fns = _functions(self.parse(self.text))
                    return len(_body_ops(fns[f])) if f < len(fns) else 0

                progress |= self._ddmin(n_results, lambda m, s, f=f: cut_results(m, f, s))
                progress |= self._ddmin(n_ops, lambda m, s, f=f: cut_ops(m, f, s))
                progress |= self._try(lambda m, f=f: _require(cut_unused_args(m, f)))
            self.log(f"{len(self.text.splitlines())} lines after {self.tries} tries")
            if not progress:
                return self.text


def _cut_functions(module: ModuleOp, indices: set[int]) -> None:
    fns = _functions(module)
    for k in sorted(indices, reverse=True):
        fns[k].detach()
        fns[k].erase(safe_erase=False)


def _require(changed: bool) -> None:
    if not changed:
        raise ValueError("nothing to cut")


def reduce_file(
    path: str | Path,
    command: str,
    match: str | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> tuple[str, str]:
    """(the reduced text, the pattern it still matches). Raises ValueError when
    the input does not fail the command to begin with."""
    from coil.ir import parse_module, print_module

    text = Path(path).read_text()
    with tempfile.TemporaryDirectory(prefix="coil-reduce-") as tmp:
        candidate = Path(tmp) / Path(path).name

        def outcome(candidate_text: str) -> Outcome:
            candidate.write_text(candidate_text)
            return run_command(command, candidate)

        first = outcome(text)
        if first.code == 0:
            raise ValueError(f"the command does not fail on {path}: nothing to reduce")
        if first.code in (126, 127):  # the shell's "not executable", "not found"
            # Every candidate would "fail" the same way: it reduced to nothing.
            said = first.output.strip().splitlines()
            raise ValueError(
                f"the command could not be run (exit status {first.code}"
                f"{': ' + said[-1] if said else ''})"
            )
        pattern = match if match is not None else failure_pattern(first.output)
        log(f"a candidate must fail (exit status != 0) with output matching: {pattern}")
        regex = re.compile(pattern)

        def interesting(candidate_text: str) -> bool:
            result = outcome(candidate_text)
            return result.code != 0 and regex.search(result.output) is not None

        if not interesting(print_module(parse_module(text))):
            raise ValueError(
                f"{path} printed back by coil no longer fails the same way; pass --match"
            )
        reducer = Reducer(text, interesting, parse_module, print_module, log)
        return reducer.reduce(), pattern


def command_words(words: Sequence[str]) -> str:
    """The command under test from ``coil reduce``'s trailing words."""
    if len(words) == 1:
        return words[0]
    return " ".join(shlex.quote(w) for w in words)


__all__ = ["Reducer", "failure_pattern", "reduce_file", "run_command"]
