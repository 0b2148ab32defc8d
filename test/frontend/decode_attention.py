# RUN: %served_python %s | filecheck %s
# pack_grouped_queries (frontend/decode_attention.py): one query position over
# key/value heads repeated for grouped-query attention attends the unrepeated
# heads, the query heads packed as positions; no copy of the keys/values.
import torch
import torch.nn.functional as F

from coil.testing import print_imported


class Decode(torch.nn.Module):
    """transformers' repeat_kv for k, gpt-fast's repeat_interleave for v."""

    def __init__(self, **sdpa):
        super().__init__()
        self.sdpa = sdpa

    def forward(self, q, k, v, mask):
        b, g, s, d = k.shape
        k = k[:, :, None, :, :].expand(b, g, 2, s, d).reshape(b, g * 2, s, d)
        v = v.repeat_interleave(2, dim=1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.sdpa)


def run(q_len=1, mask_heads=1, **sdpa):
    q = torch.randn(1, 4, q_len, 8)
    k, v = torch.randn(1, 2, 16, 8), torch.randn(1, 2, 16, 8)
    print_imported(Decode(**sdpa), (q, k, v, torch.randn(1, mask_heads, 1, 16)))


# CHECK-LABEL: func.func @forward
# CHECK-NOT: aten.expand
# CHECK: %[[Q:.*]] = aten.view.default(%{{.*}}, size = [-1, 2, 2, 8]) : !aten.tensor<[1, 2, 2, 8], f32>
# CHECK-NEXT: %[[O:.*]], %{{.*}} = aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%[[Q]], %{{.*}}, %{{.*}}, attn_mask = %{{.*}}, scale = 0.5) : (!aten.tensor<[1, 2, 2, 8], f32>
# CHECK-NEXT: aten.view.default(%[[O]], size = [-1, 4, 1, 8]) : !aten.tensor<[1, 4, 1, 8], f32>
run(scale=0.5)

# Two query positions: the repeats stay.
# CHECK-LABEL: func.func @forward
# CHECK: aten.expand
# CHECK: _scaled_dot_product_flash_attention_for_cpu"(%{{.*}}) : (!aten.tensor<[1, 4, 2, 8], f32>
run(q_len=2)

# A mask that differs per head: the repeats stay.
# CHECK-LABEL: func.func @forward
# CHECK: aten.expand
# CHECK: _scaled_dot_product_flash_attention_for_cpu"(%{{.*}}) : (!aten.tensor<[1, 4, 1, 8], f32>
run(mask_heads=4)
