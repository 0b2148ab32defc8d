// RUN: fx-opt %s -p aten-fuse-matvec --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'aten-fuse-matvec{all-devices=true}' --split-input-file | filecheck %s --check-prefix=ALL

// q, k and v of one normalized row (grouped-query attention: k and v are
// narrower than q): one product over the concatenated weights, each result a
// slice of its columns with the product's type (one row: its stride is moot).

// CHECK-LABEL: func.func @qkv
// CHECK-NEXT:    %fused_weight = aten.cat.default([%wq, %wk, %wv]) : !aten.tensor<[128, 64], bf16, device "cuda:0">
// CHECK-NEXT:    %{{.*}} = aten.permute.default(%fused_weight, dims = [1, 0]) : !aten.tensor<[64, 128], bf16, strides [1, 64], device "cuda:0">
// CHECK-NEXT:    %fused = aten.mm.default(%x, %{{.*}}) : !aten.tensor<[1, 128], bf16, device "cuda:0">
// CHECK-NEXT:    %q = aten.slice.Tensor(%fused, dim = 1, start = 0, end = 64) : !aten.tensor<[1, 64], bf16, device "cuda:0">
// CHECK-NEXT:    %k = aten.slice.Tensor(%fused, dim = 1, start = 64, end = 96) : !aten.tensor<[1, 32], bf16, device "cuda:0">
// CHECK-NEXT:    %v = aten.slice.Tensor(%fused, dim = 1, start = 96, end = 128) : !aten.tensor<[1, 32], bf16, device "cuda:0">
// CHECK-NEXT:    func.return %q, %k, %v

func.func @qkv(%x: !aten.tensor<[1, 64], bf16, device "cuda:0">, %wq: !aten.tensor<[64, 64], bf16, device "cuda:0">, %wk: !aten.tensor<[32, 64], bf16, device "cuda:0">, %wv: !aten.tensor<[32, 64], bf16, device "cuda:0">) -> (!aten.tensor<[1, 64], bf16, device "cuda:0">, !aten.tensor<[1, 32], bf16, device "cuda:0">, !aten.tensor<[1, 32], bf16, device "cuda:0">) {
  %tq = aten.permute.default(%wq, dims = [1, 0]) : !aten.tensor<[64, 64], bf16, strides [1, 64], device "cuda:0">
  %q = aten.mm.default(%x, %tq) : !aten.tensor<[1, 64], bf16, device "cuda:0">
  %tk = aten.permute.default(%wk, dims = [1, 0]) : !aten.tensor<[64, 32], bf16, strides [1, 64], device "cuda:0">
  %k = aten.mm.default(%x, %tk) : !aten.tensor<[1, 32], bf16, device "cuda:0">
  %tv = aten.t.default(%wv) : !aten.tensor<[64, 32], bf16, strides [1, 64], device "cuda:0">
  %v = aten.mm.default(%x, %tv) : !aten.tensor<[1, 32], bf16, device "cuda:0">
  func.return %q, %k, %v : !aten.tensor<[1, 64], bf16, device "cuda:0">, !aten.tensor<[1, 32], bf16, device "cuda:0">, !aten.tensor<[1, 32], bf16, device "cuda:0">
}

// -----

// Gate and up, of one width: loop-fuse joins them as siblings, with the
// SiLU(gate) * up epilogue, so they stay apart here.

// CHECK-LABEL: func.func @gate_up
// CHECK-NOT:     aten.cat
// CHECK:         aten.mm.default(%x, %tg)
// CHECK:         aten.mm.default(%x, %tu)

func.func @gate_up(%x: !aten.tensor<[1, 64], bf16, device "cuda:0">, %wg: !aten.tensor<[128, 64], bf16, device "cuda:0">, %wu: !aten.tensor<[128, 64], bf16, device "cuda:0">) -> (!aten.tensor<[1, 128], bf16, device "cuda:0">, !aten.tensor<[1, 128], bf16, device "cuda:0">) {
  %tg = aten.permute.default(%wg, dims = [1, 0]) : !aten.tensor<[64, 128], bf16, strides [1, 64], device "cuda:0">
  %g = aten.mm.default(%x, %tg) : !aten.tensor<[1, 128], bf16, device "cuda:0">
  %tu = aten.permute.default(%wu, dims = [1, 0]) : !aten.tensor<[64, 128], bf16, strides [1, 64], device "cuda:0">
  %u = aten.mm.default(%x, %tu) : !aten.tensor<[1, 128], bf16, device "cuda:0">
  func.return %g, %u : !aten.tensor<[1, 128], bf16, device "cuda:0">, !aten.tensor<[1, 128], bf16, device "cuda:0">
}

// -----

// Not matrix-vector products: two rows (each a GEMM of its own), a row-major
// [K, N] matrix (GPT-2's Conv1D: cuBLAS's), or products of different inputs.

// CHECK-LABEL: func.func @not_matvecs
// CHECK-NOT:     aten.cat
// ALL-LABEL: func.func @not_matvecs
// ALL-NOT:       aten.cat

func.func @not_matvecs(%x2: !aten.tensor<[2, 64], bf16, device "cuda:0">, %x: !aten.tensor<[1, 64], bf16, device "cuda:0">, %y: !aten.tensor<[1, 64], bf16, device "cuda:0">, %wa: !aten.tensor<[64, 64], bf16, device "cuda:0">, %wb: !aten.tensor<[32, 64], bf16, device "cuda:0">, %kn: !aten.tensor<[64, 32], bf16, device "cuda:0">) -> (!aten.tensor<[2, 64], bf16, device "cuda:0">, !aten.tensor<[2, 32], bf16, device "cuda:0">, !aten.tensor<[1, 64], bf16, device "cuda:0">, !aten.tensor<[1, 32], bf16, device "cuda:0">, !aten.tensor<[1, 32], bf16, device "cuda:0">) {
  %ta = aten.permute.default(%wa, dims = [1, 0]) : !aten.tensor<[64, 64], bf16, strides [1, 64], device "cuda:0">
  %tb = aten.permute.default(%wb, dims = [1, 0]) : !aten.tensor<[64, 32], bf16, strides [1, 64], device "cuda:0">
  %a2 = aten.mm.default(%x2, %ta) : !aten.tensor<[2, 64], bf16, device "cuda:0">
  %b2 = aten.mm.default(%x2, %tb) : !aten.tensor<[2, 32], bf16, device "cuda:0">
  %a = aten.mm.default(%x, %ta) : !aten.tensor<[1, 64], bf16, device "cuda:0">
  %c = aten.mm.default(%x, %kn) : !aten.tensor<[1, 32], bf16, device "cuda:0">
  %b = aten.mm.default(%y, %tb) : !aten.tensor<[1, 32], bf16, device "cuda:0">
  func.return %a2, %b2, %a, %c, %b : !aten.tensor<[2, 64], bf16, device "cuda:0">, !aten.tensor<[2, 32], bf16, device "cuda:0">, !aten.tensor<[1, 64], bf16, device "cuda:0">, !aten.tensor<[1, 32], bf16, device "cuda:0">, !aten.tensor<[1, 32], bf16, device "cuda:0">
}

// -----

// On the CPU ATen's GEMV runs them (matvec=auto): left alone unless
// all-devices=true (the CPU tests, with convert-aten-to-loop{matvec=on}).

// CHECK-LABEL: func.func @cpu
// CHECK-NOT:     aten.cat
// ALL-LABEL: func.func @cpu
// ALL-NEXT:      %fused_weight = aten.cat.default([%wq, %wk]) : !aten.tensor<[96, 64], f32>

func.func @cpu(%x: !aten.tensor<[1, 64], f32>, %wq: !aten.tensor<[64, 64], f32>, %wk: !aten.tensor<[32, 64], f32>) -> (!aten.tensor<[1, 64], f32>, !aten.tensor<[1, 32], f32>) {
  %tq = aten.permute.default(%wq, dims = [1, 0]) : !aten.tensor<[64, 64], f32, strides [1, 64]>
  %q = aten.mm.default(%x, %tq) : !aten.tensor<[1, 64], f32>
  %tk = aten.permute.default(%wk, dims = [1, 0]) : !aten.tensor<[64, 32], f32, strides [1, 64]>
  %k = aten.mm.default(%x, %tk) : !aten.tensor<[1, 32], f32>
  func.return %q, %k : !aten.tensor<[1, 64], f32>, !aten.tensor<[1, 32], f32>
}
