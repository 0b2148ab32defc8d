// Every pass option is checked (type, range, power of two) when the pipeline is
// built: the message names the pass, the option and the values it allows, and
// fx-opt exits 1 without a traceback.
// RUN: not fx-opt %s -p 'convert-loop-to-tt{xblock=abc}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not fx-opt %s -p 'convert-loop-to-tt{num-warps=-1}' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not fx-opt %s -p 'convert-loop-to-tt{xblock=3}' 2>&1 | filecheck %s --check-prefix=POW2
// RUN: not fx-opt %s -p 'convert-loop-to-tt{xblok=4}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not fx-opt %s -p 'convert-loop-to-tt{tile2d=on}' 2>&1 | filecheck %s --check-prefix=TILE2D
// RUN: not fx-opt %s -p 'convert-loop-to-tt{yblock=2048}' 2>&1 | filecheck %s --check-prefix=YBLOCK
// RUN: not fx-opt %s -p 'memory-plan{reuse=3}' 2>&1 | filecheck %s --check-prefix=BOOL
// RUN: not fx-opt %s -p 'loop-inline{max-uses=-1}' 2>&1 | filecheck %s --check-prefix=INLINE
// RUN: not fx-opt %s -p 'loop-fuse{max-members=1}' 2>&1 | filecheck %s --check-prefix=FUSE
// RUN: not fx-opt %s -p 'loop-inline{recompute-margin=x}' 2>&1 | filecheck %s --check-prefix=FLOAT
// RUN: not fx-opt %s -p 'loop-inline{recompute-margin=-1.5}' 2>&1 | filecheck %s --check-prefix=MARGIN
// An integer is a number: a float option takes 4 as 4.0 (xDSL alone refuses it).
// RUN: fx-opt %s -p 'convert-aten-to-loop,loop-inline{recompute-margin=4}' | filecheck %s --check-prefix=INT
// RUN: not fx-opt %s -p 'convert-aten-to-loop{fallback=maybe}' 2>&1 | filecheck %s --check-prefix=CHOICE
// RUN: not fx-opt %s -p 'aten-decompose{ops="aten.nope.default"}' 2>&1 | filecheck %s --check-prefix=OPS
// RUN: not fx-opt %s -p 'aten-decompose{ops=aten._softmax.default}' 2>&1 | filecheck %s --check-prefix=UNQUOTED
// RUN: not fx-opt %s -p 'cse;dce' 2>&1 | filecheck %s --check-prefix=SEMICOLON
// RUN: fx-opt %s -p 'convert-aten-to-loop,bufferize,convert-loop-to-tt{xblock=64 num-warps=2}' | filecheck %s --check-prefix=OK

// TYPE: fx-opt: error: convert-loop-to-tt: option 'xblock' must be an integer: 0 (heuristic) or a power of two from 1 to 65536; got abc
// RANGE: fx-opt: error: convert-loop-to-tt: option 'num-warps' must be 0 (heuristic) or a power of two from 1 to 32; got -1
// POW2: fx-opt: error: convert-loop-to-tt: option 'xblock' must be 0 (heuristic) or a power of two from 1 to 65536; got 3
// UNKNOWN: fx-opt: error: convert-loop-to-tt: unknown option 'xblok'; did you mean 'xblock' or 'yblock' or 'rblock'? (its options, closest first: xblock, rblock, yblock, bounds-check, pdl, tile2d, {{.*}})
// TILE2D: fx-opt: error: convert-loop-to-tt: option 'tile2d' must be one of "auto", "off"; got on
// YBLOCK: fx-opt: error: convert-loop-to-tt: option 'yblock' must be 0 (heuristic) or a power of two from 1 to 1024; got 2048
// BOOL: fx-opt: error: memory-plan: option 'reuse' must be true or false; got 3
// INLINE: fx-opt: error: loop-inline: option 'max-uses' must be an integer >= 0; got -1
// FUSE: fx-opt: error: loop-fuse: option 'max-members' must be an integer >= 2; got 1
// FLOAT: fx-opt: error: loop-inline: option 'recompute-margin' must be 0 (never stores for it) or a number > 0; got x
// MARGIN: fx-opt: error: loop-inline: option 'recompute-margin' must be 0 (never stores for it) or a number > 0; got -1.5
// INT: loop.pointwise
// CHOICE: fx-opt: error: convert-aten-to-loop: option 'fallback' must be one of "extern", "error"; got maybe
// OPS: fx-opt: error: aten-decompose: option 'ops' must be aten overload names, each in quotes: "aten._softmax.default","aten.mm.default"; got aten.nope.default
// A value with a dot written bare is xDSL's "Unknown token": say how to quote it
// (only inside a pass's braces; `cse;dce` gets xDSL's message alone).
// UNQUOTED: fx-opt: error: invalid pass pipeline
// UNQUOTED: Unknown token
// UNQUOTED: (a value with dots, colons or spaces goes in double quotes: aten-decompose{ops="aten._softmax.default"})
// SEMICOLON: Unknown token
// SEMICOLON-NOT: double quotes
// TYPE-NOT: Traceback
// OK: tt.make_range {start = 0 : i32, end = 64 : i32}
// OK: host.launch @{{.*}} grid [2, 1, 1] {{.*}} {num_warps = 2 : i64

func.func @f(%x: !aten.tensor<[100], f32>) -> !aten.tensor<[100], f32> {
  %y = aten.relu.default(%x) : !aten.tensor<[100], f32>
  func.return %y : !aten.tensor<[100], f32>
}
