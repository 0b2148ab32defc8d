// RUN: fx-opt %s -p 'aten-cpu-packed-linear{inference=true probe=false}' --split-input-file | filecheck %s
// RUN: fx-opt %s -p aten-cpu-packed-linear --split-input-file | filecheck %s --check-prefix=OFF

// A CPU inference graph's Linear products of parameters ({coil.static}) call
// coil::packed_linear (a weight packed once); without inference=true (a
// training graph's weights change every step) nothing changes.

// CHECK-LABEL: func.func @linear_f32
// CHECK-NOT:     aten.addmm
// CHECK-NOT:     aten.permute
// CHECK:         %[[Y:.*]] = aten.operator "coil::packed_linear"(%arg2, %arg0, %arg1) : !aten.tensor<[64, 2048], f32>
// CHECK:         %[[Z:.*]] = aten.operator "coil::packed_linear"(%[[Y]], %arg3, none) : !aten.tensor<[64, 512], f32>
// CHECK:         func.return %[[Z]]
// OFF-LABEL: func.func @linear_f32
// OFF:         aten.addmm.default
// OFF:         aten.mm.default
// OFF-NOT:     coil::packed_linear
func.func @linear_f32(%arg0: !aten.tensor<[2048, 512], f32> {coil.static}, %arg1: !aten.tensor<[2048], f32> {coil.static}, %arg2: !aten.tensor<[64, 512], f32>, %arg3: !aten.tensor<[512, 2048], f32> {coil.static}) -> !aten.tensor<[64, 512], f32> {
  %permute = aten.permute.default(%arg0, dims = [1, 0]) : !aten.tensor<[512, 2048], f32, strides [1, 512]>
  %addmm = aten.addmm.default(%arg1, %arg2, %permute) : !aten.tensor<[64, 2048], f32>
  %t = aten.t.default(%arg3) : !aten.tensor<[2048, 512], f32, strides [1, 2048]>
  %mm = aten.mm.default(%addmm, %t) : !aten.tensor<[64, 512], f32>
  func.return %mm : !aten.tensor<[64, 512], f32>
}

// -----

// One row of bf16 packs (oneDNN's GEMM repacks the weight at any row count);
// one row of f32 does not (ATen's GEMV reads the weight once anyway).

// CHECK-LABEL: func.func @one_row
// CHECK:         aten.operator "coil::packed_linear"(%arg1, %arg0, none) : !aten.tensor<[1, 1024], bf16>
// CHECK:         aten.mm.default(%arg3, %{{.*}}) : !aten.tensor<[1, 1024], f32>
func.func @one_row(%arg0: !aten.tensor<[1024, 1024], bf16> {coil.static}, %arg1: !aten.tensor<[1, 1024], bf16>, %arg2: !aten.tensor<[1024, 1024], f32> {coil.static}, %arg3: !aten.tensor<[1, 1024], f32>) -> (!aten.tensor<[1, 1024], bf16>, !aten.tensor<[1, 1024], f32>) {
  %t = aten.t.default(%arg0) : !aten.tensor<[1024, 1024], bf16, strides [1, 1024]>
  %mm = aten.mm.default(%arg1, %t) : !aten.tensor<[1, 1024], bf16>
  %t_1 = aten.t.default(%arg2) : !aten.tensor<[1024, 1024], f32, strides [1, 1024]>
  %mm_1 = aten.mm.default(%arg3, %t_1) : !aten.tensor<[1, 1024], f32>
  func.return %mm, %mm_1 : !aten.tensor<[1, 1024], bf16>, !aten.tensor<[1, 1024], f32>
}

// -----

// Under bf16 autocast a float32 parameter reaches the product as a
// _to_copy made on every call: the operator gets the parameter (and packs it
// as bf16 once); the copy and its transpose go. The bias's copy stays (it is
// a constant of the graph, computed once by buffer-hoist-constants). A copy
// to another dtype than the product's, or of an activation, is left alone.

// CHECK-LABEL: func.func @autocast
// CHECK-NEXT:    %[[B:.*]] = aten._to_copy.default(%arg1, dtype = bf16)
// CHECK-NEXT:    %[[X:.*]] = aten._to_copy.default(%arg2, dtype = bf16)
// CHECK-NEXT:    aten.operator "coil::packed_linear"(%[[X]], %arg0, %[[B]]) : !aten.tensor<[16, 4096], bf16>
// CHECK-NOT:     aten._to_copy.default(%arg0
// CHECK:         aten._to_copy.default(%arg3, dtype = f16)
// CHECK:         aten.mm.default
// CHECK-NOT:     coil::packed_linear
func.func @autocast(%arg0: !aten.tensor<[4096, 1024], f32> {coil.static}, %arg1: !aten.tensor<[4096], f32> {coil.static}, %arg2: !aten.tensor<[16, 1024], f32>, %arg3: !aten.tensor<[4096, 1024], f32> {coil.static}, %arg4: !aten.tensor<[16, 1024], f16>) -> (!aten.tensor<[16, 4096], bf16>, !aten.tensor<[16, 4096], f16>) {
  %b = aten._to_copy.default(%arg1, dtype = bf16) : !aten.tensor<[4096], bf16>
  %w = aten._to_copy.default(%arg0, dtype = bf16) : !aten.tensor<[4096, 1024], bf16>
  %x = aten._to_copy.default(%arg2, dtype = bf16) : !aten.tensor<[16, 1024], bf16>
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[1024, 4096], bf16, strides [1, 1024]>
  %y = aten.addmm.default(%b, %x, %t) : !aten.tensor<[16, 4096], bf16>
  %w16 = aten._to_copy.default(%arg3, dtype = f16) : !aten.tensor<[4096, 1024], f16>
  %t16 = aten.permute.default(%w16, dims = [1, 0]) : !aten.tensor<[1024, 4096], f16, strides [1, 1024]>
  %y16 = aten.mm.default(%arg4, %t16) : !aten.tensor<[16, 4096], f16>
  func.return %y, %y16 : !aten.tensor<[16, 4096], bf16>, !aten.tensor<[16, 4096], f16>
}

// -----

// Left alone: a weight that is not a parameter (an activation), a small
// weight (the packed call's own cost outweighs the packing saved), a product
// on CUDA, a scaled addmm, a 2-D bias.

// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     coil::packed_linear
func.func @left_alone(%arg0: !aten.tensor<[1024, 512], f32>, %arg1: !aten.tensor<[64, 512], f32>, %arg2: !aten.tensor<[64, 64], f32> {coil.static}, %arg3: !aten.tensor<[64, 64], f32>, %arg4: !aten.tensor<[1024, 512], f32, device "cuda:0"> {coil.static}, %arg5: !aten.tensor<[64, 512], f32, device "cuda:0">, %arg6: !aten.tensor<[1024, 512], f32> {coil.static}, %arg7: !aten.tensor<[1024], f32>, %arg8: !aten.tensor<[64, 1024], f32>) -> (!aten.tensor<[64, 1024], f32>, !aten.tensor<[64, 64], f32>, !aten.tensor<[64, 1024], f32, device "cuda:0">, !aten.tensor<[64, 1024], f32>, !aten.tensor<[64, 1024], f32>) {
  %t = aten.t.default(%arg0) : !aten.tensor<[512, 1024], f32, strides [1, 512]>
  %mm = aten.mm.default(%arg1, %t) : !aten.tensor<[64, 1024], f32>
  %t_1 = aten.t.default(%arg2) : !aten.tensor<[64, 64], f32, strides [1, 64]>
  %mm_1 = aten.mm.default(%arg3, %t_1) : !aten.tensor<[64, 64], f32>
  %t_2 = aten.t.default(%arg4) : !aten.tensor<[512, 1024], f32, strides [1, 512], device "cuda:0">
  %mm_2 = aten.mm.default(%arg5, %t_2) : !aten.tensor<[64, 1024], f32, device "cuda:0">
  %t_3 = aten.t.default(%arg6) : !aten.tensor<[512, 1024], f32, strides [1, 512]>
  %addmm = aten.addmm.default(%arg7, %arg1, %t_3, beta = 2) : !aten.tensor<[64, 1024], f32>
  %addmm_1 = aten.addmm.default(%arg8, %arg1, %t_3) : !aten.tensor<[64, 1024], f32>
  func.return %mm, %mm_1, %mm_2, %addmm, %addmm_1 : !aten.tensor<[64, 1024], f32>, !aten.tensor<[64, 64], f32>, !aten.tensor<[64, 1024], f32, device "cuda:0">, !aten.tensor<[64, 1024], f32>, !aten.tensor<[64, 1024], f32>
}
