"""Reduction lowerings (sum, mean, prod, amax/amin, argmax/argmin, var/std
through Welford, any/all): one ``loop.reduction`` over the kept dimensions x
the reduced ones, plus a pointwise epilogue where the op needs one (mean,
var)."""
