// RUN: fx-opt --help | filecheck %s --check-prefix=HELP
// RUN: fx-opt --help-all | filecheck %s --check-prefix=HELPALL
// RUN: fx-opt --version | filecheck %s --check-prefix=VERSION
// RUN: fx-opt %s -p canonicalize,cse,dce --print-between-passes | filecheck %s --check-prefix=BETWEEN
// RUN: fx-opt %s -p "%aten_pipeline" | filecheck %s --check-prefix=ATEN
// RUN: fx-opt %s -p "%buffer_pipeline" | filecheck %s --check-prefix=DEFAULT
// RUN: fx-opt %s -p "%default_pipeline" | filecheck %s --check-prefix=HOST
// RUN: fx-opt %s -p "%default_pipeline" -t python | filecheck %s --check-prefix=PY
// RUN: coil pipeline | filecheck %s --check-prefix=PIPELINE -DPIPE="%default_pipeline"
// RUN: coil --help | filecheck %s --check-prefix=COIL
// RUN: coil pipeline --help | filecheck %s --check-prefix=PIPEHELP

// fx-opt --help lists coil's passes with one line each and then their options
// (name=<type>, the default, what it does, the values it allows), coil's
// targets and pipelines; not xDSL's ~150 other passes (--help-all adds those)
// and none of xDSL's targets but mlir (-t takes only these).
// HELP: -p PASSES
// HELP-NOT: arm-asm
// HELP-NOT: convert-linalg-to-loops
// HELP: coil passes (-p NAME or NAME{option=value ...}) and their options:
// HELP-NEXT: aten-channels-last {{ +}}run 2-D convolutions on NHWC tensors
// HELP-NEXT: {{^      }}mode=<auto|on|off> {{ +}}(default auto) "auto": when Inductor's rules say it pays;
// HELP: aten-peel-conv-bias {{ +}}a CUDA convolution
// HELP-NEXT: all-devices=<bool> {{ +}}(default false)
// HELP: convert-loop-to-tt {{ +}}each bufferized nest -> one Triton kernel
// HELP-NEXT: {{^      }}xblock=<int> {{ +}}(default 0) XBLOCK, the tile's extent along the output (0: the
// HELP-NEXT: {{^ +}}heuristic). Allowed: 0 (heuristic) or a power of two from 1 to
// HELP-NEXT: {{^ +}}65536.
// HELP-NEXT: rblock=<int> {{ +}}(default 0)
// HELP: num-warps=<int> {{ +}}(default 0) Warps per program (0: the heuristic). Allowed: 0
// HELP: num-stages=<int> {{ +}}(default 0)
// HELP: persistent-threshold=<int> {{ +}}(default 4096)
// HELP: autotune=<int> {{ +}}(default 0)
// HELP: dedupe=<bool> {{ +}}(default true)
// HELP: bounds-check=<bool> {{ +}}(default true)
// HELP: online-softmax=<bool> {{ +}}(default true)
// HELP: tile2d=<auto|off> {{ +}}(default auto)
// HELP: yblock=<int> {{ +}}(default 0)
// HELP: outer-reduction=<bool> {{ +}}(default true)
// HELP: split-finish=<bool> {{ +}}(default true)
// HELP: eviction=<auto|stream|off> {{ +}}(default auto)
// HELP: convert-buffer-to-host
// HELP: xDSL passes in coil's pipelines:
// HELP-NEXT: cse
// HELP: targets (-t):
// HELP-NEXT: mlir {{ +}}the IR as text (default)
// HELP-NEXT: triton
// HELP-NEXT: python
// HELP-NEXT: cpp
// HELP-NEXT: cpp-kernels {{ +}}the module's cpu.func kernels
// HELP-EMPTY:
// HELP-NEXT: pipelines (-p "$(coil pipeline NAME)"):
// HELP-NEXT: default {{ +}}what the torch.compile backend runs
// HELPALL: coil passes (-p NAME or NAME{option=value ...}) and their options:
// HELPALL: other xDSL passes
// HELPALL: convert-linalg-to-loops
// HELPALL-NOT: arm-asm
// VERSION: fx-opt (coil {{[0-9.]+}}) on xDSL 0.74
// PIPELINE: {{^}}[[PIPE]]{{$}}
// COIL: {import,demo,pipeline,bisect,reduce}
// `coil pipeline --help` says what each name runs.
// PIPEHELP: usage: coil pipeline [-h] [NAME]
// PIPEHELP: pipelines:
// PIPEHELP-NEXT: default {{ +}}what the torch.compile backend runs
// PIPEHELP: buffer {{ +}}loop, then bufferize and plan memory

func.func @f(%x: !aten.tensor<[4, 8], f32>) -> !aten.tensor<[4, 8], f32> {
  %a = aten.clone.default(%x) : !aten.tensor<[4, 8], f32>
  %b = aten._softmax.default(%a, dim = 1, half_to_float = false) : !aten.tensor<[4, 8], f32>
  %c = aten.relu.default(%b) : !aten.tensor<[4, 8], f32>
  %d = aten.relu.default(%b) : !aten.tensor<[4, 8], f32>
  %e = aten.add.Tensor(%c, %d) : !aten.tensor<[4, 8], f32>
  func.return %e : !aten.tensor<[4, 8], f32>
}

// BETWEEN: IR after canonicalize:
// BETWEEN-NOT: aten.clone
// BETWEEN: IR after cse:
// BETWEEN: %[[R:.*]] = aten.relu.default
// BETWEEN-NOT: aten.relu.default
// BETWEEN: aten.add.Tensor(%[[R]], %[[R]])

// ATEN-LABEL: func.func @f
// ATEN-NOT: aten.clone
// ATEN-NOT: aten._softmax
// ATEN: aten.amax.default(%x, dim = [1], keepdim = true)
// ATEN: %[[R:.*]] = aten.relu.default
// ATEN-NEXT: aten.add.Tensor(%[[R]], %[[R]])

// The middle end (the buffer pipeline) ends at the buffer level: softmax,
// relu and the add are one fused kernel writing one buffer.
// DEFAULT-LABEL: func.func @f
// DEFAULT-SAME: (%x: !buffer.buffer<[4, 8], f32>) -> !buffer.buffer<[4, 8], f32>
// DEFAULT-NEXT: %[[OUT:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32>
// DEFAULT-NEXT: loop.fused [4] [8] outs(%[[OUT]] : !buffer.buffer<[4, 8], f32>)
// DEFAULT: loop.reduction max [4] [8]
// DEFAULT: loop.reduction sum [4] [8]
// DEFAULT: loop.pointwise [4, 8]
// DEFAULT: arith.maximumf
// DEFAULT-NOT: aten.
// DEFAULT: func.return %[[OUT]]

// The default pipeline goes on to the kernel and the wrapper.
// HOST: tt.func public @[[K:coil_[a-z_0-9]+]](%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
// HOST: "tt.reduce"
// HOST: tt.store
// HOST-LABEL: host.func @f
// HOST-NEXT: %[[OUT:.*]] = host.empty_strided : !buffer.buffer<[4, 8], f32>
// HOST-NEXT: host.launch @[[K]] grid [1, 1, 1] (%x, %[[OUT]] : !buffer.buffer<[4, 8], f32>, !buffer.buffer<[4, 8], f32>)
// HOST-NEXT: host.return %[[OUT]]

// PY: @triton.jit
// PY: def [[K:coil_[a-z_0-9]+]](in_ptr0, out_ptr0):
// PY: [[L:coil_[a-z_0-9]+]] = Launcher(globals(), "[[K]]", ("*float32", "*float32"), "cpu", {{[0-9]+}}, 1, checked=(0,))
// PY: def call(args):
// PY: [[S:stream.*]] = raw_stream("cpu")
// PY: [[L]].run(1, 1, 1, [[S]], x, {{.*}})
// A CPU module runs its kernels under Triton's interpreter by itself.
// PY: # CPU tensors: run the kernels above under Triton's interpreter.
// PY-NEXT: interpret_kernels(globals())
