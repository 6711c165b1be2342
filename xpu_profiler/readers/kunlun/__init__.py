"""Kunlun's readers: XProfiler traces (``xprofiler``, its fields in ``xprofiler_fields``) and
the ``[XPURT_PROF]`` kernel logs of the Kunlun runtime (``xpurt_log``)."""
