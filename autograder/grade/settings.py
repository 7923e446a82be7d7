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
    # GPU memory torch may allocate in one notebook. 02's sweep peaks at 3.6 GiB with its CUDA context
    # (docs/benchmarks.md); 05's forward performance test ran out of 4 GiB on the H200 (bench_against
    # refills fresh copies of its 256 MB input for both timers), so 6: an H200 still holds 16 notebooks.
    gpu_memory_gb: float = 6.0
