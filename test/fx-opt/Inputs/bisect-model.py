# Model of bisect.mlir: a softmax of x * 2 + y, and a row max.
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.softmax(x * 2 + y, -1).sum(0), x.amax(1)


model = Model()
example_inputs = (torch.randn(8, 33), torch.randn(33))
