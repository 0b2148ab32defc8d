"""A row softmax with dynamic sizes: `coil import examples/softmax.py`."""

import torch

model = torch.nn.Softmax(dim=-1)
example_inputs = (torch.randn(16, 128),)
dynamic = True
