"""Resource monitoring: what a run node, a training job (every rank) and their children use.

- ``proctree``: CPU and RSS of a process and all its descendants, from ``/proc`` (psutil
  where there is no ``/proc``).
- ``nvml`` / ``gpu``: per-process GPU utilisation and memory through NVML (``pynvml`` from
  ``nvidia-ml-py``, optional), MIG instances by UUID; ``fake_nvml`` answers the same calls in
  tests.
- ``series``: a bounded series per object (the last points at full rate, older ones merged).
- ``monitor``: one background thread that samples every watched object each interval and
  keeps its series in a JSON file next to the object's run folder (``files``).
- ``report``: what the REST layer serves: Prometheus text, the series of one run or job.
"""

from .monitor import Watch, watch

__all__ = ["Watch", "watch"]
