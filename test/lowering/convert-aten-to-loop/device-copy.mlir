// RUN: fx-opt %s -p convert-aten-to-loop 2>&1 | filecheck %s
// RUN: fx-opt %s -p convert-aten-to-loop 2>&1 >/dev/null | filecheck %s --check-prefix=LOG --allow-empty

// A copy to another device is a transfer, not a kernel: it is called through
// ATen by design (as Inductor does), with no "no loop lowering" warning and
// not counted as a fallback; a copy on one device (the cast) is a loop nest.

// CHECK-LABEL: func.func @device_copy
// CHECK:       buffer.extern "aten._to_copy.default"
// CHECK:       aten._to_copy.default({{.*}}device = "cpu")
// CHECK:       loop.pointwise [2]
// LOG-NOT:     no loop lowering
func.func @device_copy(%x: !aten.tensor<[2], f32, device "cuda:0">) -> (!aten.tensor<[2], f32>, !aten.tensor<[2], f16, device "cuda:0">) {
  %0 = aten._to_copy.default(%x, device = "cpu") : !aten.tensor<[2], f32>
  %1 = aten._to_copy.default(%x, dtype = f16) : !aten.tensor<[2], f16, device "cuda:0">
  func.return %0, %1 : !aten.tensor<[2], f32>, !aten.tensor<[2], f16, device "cuda:0">
}
