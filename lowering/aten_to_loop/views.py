"""View lowerings: every view is a ``loop.view`` -- an index map on its
producer, never a copy."""
