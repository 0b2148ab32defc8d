"""The start of the child-process scripts the cache tests run (test_graphcache,
test_aotcache): ``messages`` collects the coil logger's records, ``f(x, y)`` and
its inputs are the function compiled. Each test appends how it compiles."""

PRELUDE = """
import logging, sys, time
from pathlib import Path
import torch

messages = []
handler = logging.Handler()
handler.emit = lambda record: messages.append(record.getMessage())
logging.getLogger("coil").addHandler(handler)
logging.getLogger("coil").setLevel(logging.INFO)

def f(x, y):
    return torch.softmax(x @ y, -1) * 2 + 1

x, y = torch.randn(8, 16), torch.randn(16, 32)
"""
