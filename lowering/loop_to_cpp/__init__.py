"""convert-loop-to-cpp's C++ printer (``source.py``), shared with ``-t cpp-kernels``."""
