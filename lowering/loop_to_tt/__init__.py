"""convert-loop-to-tt's parts: kernel building, index math, reductions, math ops."""
