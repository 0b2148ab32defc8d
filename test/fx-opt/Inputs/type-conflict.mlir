// %x is a tensor, used as an i32.
func.func @f(%x: !aten.tensor<[4], f32>, %y: i32) -> i32 {
  %0 = arith.addi %y, %x : i32
  func.return %0 : i32
}
