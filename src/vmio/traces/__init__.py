"""Block request traces: the ``Trace`` arrays, one reader per format, and the traces vmio keeps of its VM runs."""
