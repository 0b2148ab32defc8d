"""Write a small torch.export archive (argv[1]) for the fx-opt .pt2 tests."""

import sys

import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)


torch.manual_seed(0)
ep = torch.export.export(Block(), (torch.randn(2, 8),))
torch.export.save(ep, sys.argv[1])
