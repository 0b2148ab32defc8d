// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file -t triton | filecheck %s

// Indices read in the nest's own order are folded back into the flat index:
// a row-major [48, 96] read and write use xindex itself (no // or %), a
// broadcast bias keeps its single i1 = xindex % 96.

// CHECK-LABEL: def coil_add_0(in_ptr0, in_ptr1, out_ptr0):
// CHECK-NOT:     //
// CHECK:         i1 = xindex % {{.*}}
// CHECK-NOT:     //
// CHECK:         tmp{{.*}} = tmp{{.*}} + xindex
// CHECK:         tl.load(
// CHECK-NOT:     //
// CHECK:         tl.store(
func.func @bias_add(%x: !buffer.buffer<[48, 96], f32>, %b: !buffer.buffer<[96], f32>) -> !buffer.buffer<[48, 96], f32> {
  %add = buffer.alloc : !buffer.buffer<[48, 96], f32>
  loop.pointwise [48, 96] outs(%add : !buffer.buffer<[48, 96], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[48, 96], f32>
    %c = loop.load %b[i1] : !buffer.buffer<[96], f32>
    %d = arith.addf %a, %c : f32
    loop.yield %d : f32
  }
  func.return %add : !buffer.buffer<[48, 96], f32>
}

// -----

// A [YBLOCK, XBLOCK] tile over (i0, i1) x i2: the store's 48*i0 + 8*i1 + i2
// is 8*yindex + xindex; the load x[i0, i2, i1] (48*i0 + i1 + 6*i2) reads the y
// indices out of order (i1 has coefficient 1, i0 48, not 6) and keeps i0, i1.

// CHECK-LABEL: def coil_permute_0(in_ptr0, out_ptr0):
// CHECK:         i0 = yindex // {{.*}}
// CHECK:         i1 = yindex % {{.*}}
// CHECK:         tl.load(
// CHECK-NOT:     //
// CHECK:         tmp{{.*}} = yindex * tmp{{.*}}
// CHECK:         tl.store(
func.func @permute(%x: !buffer.buffer<[4, 8, 6], f32>) -> !buffer.buffer<[4, 6, 8], f32> {
  %permute = buffer.alloc : !buffer.buffer<[4, 6, 8], f32>
  loop.pointwise [4, 6, 8] outs(%permute : !buffer.buffer<[4, 6, 8], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %a = loop.load %x[i0, i2, i1] : !buffer.buffer<[4, 8, 6], f32>
    loop.yield %a : f32
  }
  func.return %permute : !buffer.buffer<[4, 6, 8], f32>
}

// -----

// CHECK-LABEL: def coil_neg_0(in_ptr0, out_ptr0, s0):
// CHECK-NOT:     //
// CHECK:         tmp{{.*}} = tmp{{.*}} + xindex
// CHECK-NEXT:    tl.load(
// CHECK-NOT:     //
// CHECK:         tl.store(
func.func @dynamic(%x: !buffer.buffer<[s0, 64], f32>) -> !buffer.buffer<[s0, 64], f32> {
  %neg = buffer.alloc : !buffer.buffer<[s0, 64], f32>
  loop.pointwise [s0, 64] outs(%neg : !buffer.buffer<[s0, 64], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[s0, 64], f32>
    %b = arith.negf %a : f32
    loop.yield %b : f32
  }
  func.return %neg : !buffer.buffer<[s0, 64], f32>
}

// -----

// A flat range read back row-major (x[i0 floordiv s0, i0 mod s0] of an
// [s0, s0] buffer, as a split reduction's chunks read a 2-D input): the
// address s0*(i0 floordiv s0) + i0 mod s0 is i0 itself.

// CHECK-LABEL: def coil_neg_0(in_ptr0, out_ptr0, s0):
// CHECK-NOT:     //
// CHECK:         tmp{{.*}} = tmp{{.*}} + xindex
// CHECK-NEXT:    tl.load(
func.func @flat_2d(%x: !buffer.buffer<[s0, s0], f32>) -> !buffer.buffer<[s0*s0], f32> {
  %neg = buffer.alloc : !buffer.buffer<[s0*s0], f32>
  loop.pointwise [s0*s0] outs(%neg : !buffer.buffer<[s0*s0], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0 floordiv s0, i0 mod s0] : !buffer.buffer<[s0, s0], f32>
    %b = arith.negf %a : f32
    loop.yield %b : f32
  }
  func.return %neg : !buffer.buffer<[s0*s0], f32>
}
