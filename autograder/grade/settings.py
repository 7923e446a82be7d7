"""How each notebook is graded: its limits. Light to import, so that the command line can show
the defaults without loading nbgrader."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    deadline: int = 900  # seconds for a whole notebook
    memory_mb: int = 8192
    processes: int = 256
    sandbox: bool = True
    threads: int = 0  # CPU threads per notebook (torch, NumPy); 0: the cores shared among the workers
    # GPU memory torch may allocate in one notebook: 02, the largest, peaks at 3.6 GiB with its CUDA context
    # (docs/benchmarks.md).
    gpu_memory_gb: float = 4.0
