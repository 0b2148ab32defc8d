// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s
// RUN: fx-opt %s -p "convert-loop-to-tt{bounds-check=false}" --split-input-file | filecheck %s --check-prefix=NOCHECK

// A scatter is a 1-D tile over the index's shape: the body's indices address
// the out through its strides, each lane checked in range (tt.assert, as an
// indirect load), then a masked tt.store (store) or a relaxed tt.atomic_rmw
// (add: fadd on floats, add on integers; max; min).

// CHECK-LABEL: tt.func public @coil_y_0(%in_ptr0: !tt.ptr<i64>, %out_ptr0: !tt.ptr<f32>)
// CHECK-SAME:    coil.kind = "scatter"
// CHECK:         %[[T:.*]] = tt.load %{{.*}}, %xmask, %{{.*}} : tensor<32x!tt.ptr<i64>>
// CHECK:         %[[T32:.*]] = arith.trunci %[[T]] : tensor<32xi64> to tensor<32xi32>
// CHECK:         %[[OFF:.*]] = arith.muli %[[T32]], %{{.*}} : tensor<32xi32>
// CHECK:         %[[ADDR:.*]] = arith.addi %[[OFF]], %i1 : tensor<32xi32>
// CHECK:         %[[P:.*]] = tt.addptr %{{.*}}, %[[ADDR]] : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
// CHECK:         tt.assert %{{.*}}, "index out of bounds: 0 <= index < 5 (dim 0)"
// CHECK:         %{{.*}} = tt.atomic_rmw fadd, relaxed, gpu, %[[P]], %{{.*}}, %xmask : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>, tensor<32xi1>) -> tensor<32xf32>
// CHECK:       host.launch @coil_y_0 grid [1, 1, 1] (%i, %y : !buffer.buffer<[3, 6], i64>, !buffer.buffer<[5, 6], f32>)
// NOCHECK-LABEL: tt.func public @coil_y_0
// NOCHECK-NOT:   tt.assert
// NOCHECK:       tt.atomic_rmw fadd
func.func @scatter_add(%i: !buffer.buffer<[3, 6], i64>, %y: !buffer.buffer<[5, 6], f32>) {
  loop.scatter add [3, 6] at [t0, i1] outs(%y : !buffer.buffer<[5, 6], f32>) {
  ^bb0(%i0: index, %i1: index):
    %t = loop.load %i[i0, i1] : !buffer.buffer<[3, 6], i64>
    %one = arith.constant 1.0 : f32
    loop.yield %one, %t : f32, i64
  }
  func.return
}

// -----

// CHECK-LABEL: tt.func public @coil_y_0(%in_ptr0: !tt.ptr<i64>, %out_ptr0: !tt.ptr<i32>)
// CHECK-NOT:     tt.atomic_rmw
// CHECK:         tt.store %{{.*}}, %{{.*}} : tensor<4x!tt.ptr<i32>>
// CHECK-LABEL: tt.func public @coil_y_1
// CHECK:         tt.atomic_rmw max, relaxed, gpu
// CHECK-LABEL: tt.func public @coil_y_2
// CHECK:         tt.atomic_rmw min, relaxed, gpu
// CHECK-LABEL: tt.func public @coil_y_3
// CHECK:         tt.atomic_rmw add, relaxed, gpu
func.func @modes(%i: !buffer.buffer<[4], i64>, %y: !buffer.buffer<[9], i32>) {
  loop.scatter store [4] at [t0] outs(%y : !buffer.buffer<[9], i32>) {
  ^bb0(%i0: index):
    %t = loop.load %i[i0] : !buffer.buffer<[4], i64>
    %c = arith.constant 7 : i32
    loop.yield %c, %t : i32, i64
  }
  loop.scatter max [4] at [t0] outs(%y : !buffer.buffer<[9], i32>) {
  ^bb0(%i0: index):
    %t = loop.load %i[i0] : !buffer.buffer<[4], i64>
    %c = arith.constant 7 : i32
    loop.yield %c, %t : i32, i64
  }
  loop.scatter min [4] at [t0] outs(%y : !buffer.buffer<[9], i32>) {
  ^bb0(%i0: index):
    %t = loop.load %i[i0] : !buffer.buffer<[4], i64>
    %c = arith.constant 7 : i32
    loop.yield %c, %t : i32, i64
  }
  loop.scatter add [4] at [t0] outs(%y : !buffer.buffer<[9], i32>) {
  ^bb0(%i0: index):
    %t = loop.load %i[i0] : !buffer.buffer<[4], i64>
    %c = arith.constant 7 : i32
    loop.yield %c, %t : i32, i64
  }
  func.return
}
