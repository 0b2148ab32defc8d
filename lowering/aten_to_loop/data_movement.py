"""Data movement as pointwise index math (cat, pad, flip, roll, gather ...),
factories (arange, full ...), random ops and in-place copies into inputs."""
