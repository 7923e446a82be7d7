# %% [markdown]
# # Lesson 1: GPU vs CPU: why GPUs are fast, and how to measure it
#
# GPUs run the math of deep learning, and Triton lets you write GPU kernels in Python. Before
# writing kernels, this lesson answers three questions: **why** is a GPU fast, and at what kind of
# work? **How** do you time GPU work without fooling yourself? And **when** does a GPU actually win
# over the CPU? You will answer the last one with your own measurements.
#
# By the end of this lesson you will be able to:
#
# - explain how a GPU differs from a CPU: a few fast cores against thousands of simple ones, SIMT
#   and warps, latency against throughput, and why branchy sequential code belongs on the CPU;
# - time GPU work correctly (GPU work is **asynchronous**), and find the size at which the GPU
#   starts to beat NumPy on the CPU;
# - place a kernel on the **roofline** of your device: is it limited by memory or by arithmetic?
# - say what a GPU kernel is, where Triton fits, and run your first (tiny) Triton kernel.
#
# | exercise | what you write | points |
# |---|---|---|
# | 1 | `time_gpu`: a timer that is right for asynchronous GPU work | 4 |
# | 2 | `crossover`: where the GPU starts to win | 3 |
# | 3 | `bytes_moved`, `arithmetic_intensity`, `bound`: the roofline | 5 |
# | 4 | (no new code) your timer sees `x + y` run at the speed of memory | 2 |
# | 5 | `scale_kernel`: a first taste of Triton | 3 |
# | 6 | three multiple-choice questions | 3 |
# | 7 | two short written answers | 4 |
#
# **Where to run it.** On Colab choose *Runtime > Change runtime type > GPU* (a T4 is fine). With
# no GPU the notebook still runs: the setup cell switches Triton to its *interpreter*, which runs
# kernels on the CPU, and torch runs on the CPU too. Then the "GPU" side of every comparison is
# really the CPU, and the text says which numbers mean nothing. Run the setup cell first; it prints
# which mode you are in.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %% [markdown]
# The setup cell also defined the helpers the tests use. You do not need to read it; each test says
# what it checks, and a failure says what to look at. One of them appears in the tests below:
# `rand(n)` makes a fresh tensor of `n` random numbers drawn from a **normal** distribution (mean 0,
# standard deviation 1, so about half are negative), unlike `torch.rand(n)`, which draws from
# [0, 1).
#
# ## 1. A few fast cores, or thousands of simple ones
#
# A **CPU** has a few powerful cores (4 to 128). Each is built to finish *one* stream of
# instructions as soon as possible: it runs at 3 to 5 GHz, executes instructions out of order,
# predicts which way every branch goes, and hides the slowness of memory behind large caches. A CPU
# is optimised for **latency**: the time to finish one task.
#
# A **GPU** makes the opposite trade. An H200 has 132 *streaming multiprocessors* (SMs), each with
# 128 simple fp32 lanes: about 17,000 lanes at under 2 GHz, with small caches, no branch
# prediction and no out-of-order execution. What it has instead is *parallelism*: each SM keeps up
# to 2048 threads resident (270,000 on the chip) and switches between them for free. A GPU is
# optimised for **throughput**: the amount of work finished per second, over a huge amount of work.
#
# | | a server CPU (roughly) | NVIDIA H200 |
# |---|---|---|
# | cores | 16 to 128 fast cores | 132 SMs x 128 fp32 lanes |
# | fp32 arithmetic | 1 to 5 TFLOP/s | 67 TFLOP/s (989 TFLOP/s in bf16 on its tensor cores) |
# | memory bandwidth | 100 to 500 GB/s | 4800 GB/s (a copy measures about 4150 GB/s) |
# | start one piece of work | a function call: nanoseconds | a kernel launch: about 5 microseconds |
#
# **SIMT and warps.** GPU threads do not run independently. The hardware groups them by 32 into
# **warps**, and a warp executes *one instruction at a time for all its 32 threads*, each on its own
# data: single instruction, multiple threads (SIMT). It is vectorisation (NumPy's "same operation on
# a whole array") taken to a massively parallel extreme.
#
# **Hiding latency with parallelism.** Reading GPU memory takes 500 to 800 ns. A CPU core would
# stall; a GPU simply runs another warp whose data has arrived. To keep the H200's memory busy at
# 4.8 TB/s with a latency of about 600 ns, roughly 4.8e12 B/s x 6e-7 s = 2.9 MB must be *in flight*
# at every moment (Little's law): tens of thousands of loads at once. That is why GPU programs need
# so many threads, and why a GPU is wasted on small problems.
#
# ## 2. Why branchy, sequential code belongs on the CPU
#
# Two kinds of code suit a GPU badly.
#
# - **Sequential code**, where each step needs the result of the previous one (walking a linked
#   list, a recurrence like `x = f(x)` repeated a million times, parsing a file). There is one
#   stream of work, so 17,000 lanes do not help, and each slow GPU lane loses to a fast CPU core.
# - **Branchy code.** The 32 threads of a warp share one instruction stream, so when they disagree
#   on an `if`, the warp runs *both* paths one after the other, each time with the threads of the
#   other path switched off. This is called **divergence**. Here is one warp running
#   `y = sqrt(x) if x > 0 else -x * x`:

# %%
import matplotlib.pyplot as plt


def draw_divergence(lanes=32):
    """One warp executing an if/else: each row is a step in time, green lanes do work. (A drawing.)"""
    positive = np.random.default_rng(1).random(lanes) < 0.5
    everyone = np.ones(lanes, dtype=bool)
    steps = ["load x", "test x > 0", "then: y = sqrt(x)", "else: y = -x * x", "store y"]
    active = np.array([everyone, everyone, positive, ~positive, everyone])
    image = np.where(active[..., None], [0.2, 0.65, 0.3], [0.88, 0.88, 0.88])
    fig, ax = plt.subplots(figsize=(10, 2.6))
    ax.imshow(image, aspect="auto")
    ax.set_yticks(range(len(steps)), steps)
    ax.set_xticks(range(0, lanes, 4))
    ax.set_xlabel("thread (lane) of one warp of 32")
    ax.set_title(f"Divergence: both branches take a step each, and {int(lanes - positive.sum())} "
                 f"then {int(positive.sum())} lanes sit idle (grey)")
    plt.show()


draw_divergence()

# %% [markdown]
# With the branch, the warp needs one step for each path, and in each step about half its lanes do
# nothing. With a branch nested in a branch nested in a loop, most of the GPU idles. A CPU core
# instead predicts the branch, runs only the path taken, and moves on.
#
# Matrix multiplication is the opposite extreme: millions of identical multiply-adds, no branches,
# no step waiting for another. That is why deep learning (billions of matrix multiplications) runs
# on GPUs.
#
# ## 3. Memory movement dominates
#
# Per second, an H200 can do 67e12 fp32 operations but move only about 4.8e12 bytes: **14
# operations in the time it takes to load one byte**, or about 56 for every fp32 number it loads.
# Most operations do far less arithmetic per byte than that. `out = x + y` does *one* addition for
# every 12 bytes (two 4-byte reads, one 4-byte write), so the arithmetic units wait for memory
# almost all the time. For most kernels the question is not "how fast can I compute?" but "how few
# bytes can I move?" And moving data between the CPU and the GPU, over PCIe at a few tens of GB/s,
# is slower still. Section 7 turns this into a picture, the *roofline*.
#
# ## 4. Measuring GPU work: the asynchronous trap
#
# To find out when a GPU wins, we need to time things. On a GPU that is surprisingly easy to get
# wrong. When Python runs `c = a @ b` on GPU tensors, torch does not wait for the multiplication:
# it puts the kernel in a queue for the GPU (a *stream*) and returns at once, while the GPU works
# in the background. Python only waits when it needs a result (printing `c`, `c.item()`,
# `c.cpu()`), or when you ask it to: `torch.cuda.synchronize()` blocks until all queued GPU work
# has finished.
#
# So a timer that reads the clock right after the call measures how long it took to *queue* the
# work, not to do it. Watch:

# %%
n = sized(4096, 256)
a, b = torch.rand(n, n, device=DEVICE), torch.rand(n, n, device=DEVICE)
a @ b  # warm-up: the first call sets up the matrix library
if ON_GPU:
    torch.cuda.synchronize()  # nothing queued before we start the clock
start = time.perf_counter()
c = a @ b
returned_ms = (time.perf_counter() - start) * 1e3  # the call has returned...
if ON_GPU:
    torch.cuda.synchronize()
finished_ms = (time.perf_counter() - start) * 1e3  # ...and now the GPU has finished
print(f"{n}x{n} matmul: the call returned after {returned_ms:.3f} ms, "
      f"the work was done after {finished_ms:.3f} ms")
if not ON_GPU:
    print("No GPU here: torch runs on the CPU, which finishes before returning, so both numbers "
          "agree. On a GPU the first one is tens of times smaller: the time to queue the work.")


# %% [markdown]
# The first number is far smaller than the second (on an H200, 0.30 ms against 3.0 ms), and the
# second is what the multiplication really costs: the call returned long before the work was done.
# Three more rules make a timer trustworthy:
#
# - **Synchronize before starting the clock too**, so that GPU work queued earlier (by another
#   cell, say) is not billed to the function you time.
# - **Warm up.** The first call of anything on a GPU pays one-time costs: loading a library,
#   compiling a Triton kernel (tenths of a second), allocating memory. Call the function once,
#   untimed, before measuring.
# - **Repeat, and take the median.** One run can be slowed down by another process, the garbage
#   collector or a clock change; the median of several runs ignores a stray slow one, where the
#   mean does not.
#
# (Another way to time GPU work is with *CUDA events*, timestamps that the GPU itself records in
# its queue: `start = torch.cuda.Event(enable_timing=True)`, `start.record()`, the work,
# `end.record()`, `end.synchronize()`, then `start.elapsed_time(end)` in ms. The kit's `bench_ms`
# uses them, through `triton.testing.do_bench`.)
#
# ## Exercise 1: a correct timer (4 points)
#
# Write `time_gpu(fn, repeats=20)`: call `fn()` once to warm up, then `repeats` times, each run
# timed with `time.perf_counter()` between two `torch.cuda.synchronize()` calls (one before
# starting the clock, one before reading it), and return the **median** time in **milliseconds**,
# as a float.
#
# With no GPU (`ON_GPU` is `False`) there is nothing to wait for, and `torch.cuda.synchronize()`
# would fail: just time `fn()`. Your timer then works for CPU code too, which is how you will time
# NumPy with it below.

# %% nbgrader={"grade_id": "time_gpu", "solution": true}
def time_gpu(fn, repeats=20):
    """Median wall-clock time of fn() in milliseconds, over `repeats` runs after one warm-up run.

    Correct for asynchronous GPU work: waits for the GPU before starting and before stopping the clock.
    """
    ### BEGIN SOLUTION
    fn()  # warm-up: compilation, library set-up, allocation
    runs = []
    for _ in range(repeats):
        if ON_GPU:
            torch.cuda.synchronize()  # earlier work is not billed to fn
        start = time.perf_counter()
        fn()
        if ON_GPU:
            torch.cuda.synchronize()  # the clock stops when the GPU is done, not when fn returns
        runs.append((time.perf_counter() - start) * 1e3)
    return float(np.median(runs))
    ### END SOLUTION


# %% [markdown]
# The test times a function that sleeps for 20 ms (a known duration, on any machine). The hidden
# tests also check the median, the number of runs and, on a GPU, a GPU kernel that spins for about
# 20 ms: a timer that does not synchronize reports a few microseconds for it.

# %% nbgrader={"grade": true, "grade_id": "test_time_gpu", "locked": true, "points": 1}
import numbers

with exclusive_gpu():  # under the grader, no other notebook's measurement pauses this one meanwhile
    ms = call_answer(time_gpu, lambda: time.sleep(0.02), repeats=5)
if not isinstance(ms, numbers.Real) or isinstance(ms, bool):
    raise CheckFailed(f"time_gpu returned a {type(ms).__name__}: return one number, the median in "
                      "milliseconds (float(np.median(runs))).")
if 0.01 < ms < 0.1:
    raise CheckFailed(f"time_gpu says {ms:.4g} for a 20 ms sleep: that looks like seconds. Return "
                      "milliseconds: (time.perf_counter() - start) * 1e3.")
if not 18 <= ms <= 60:
    raise CheckFailed(f"time_gpu says {ms:.4g} ms for a function that sleeps 20 ms: time each call "
                      "of fn() with time.perf_counter() and return the median in milliseconds.")
print(f"time_gpu measured a 20 ms sleep as {ms:.2f} ms.")

# %% nbgrader={"grade": true, "grade_id": "test_time_gpu_hidden", "locked": true, "points": 3}
# Hidden tests check the median, the number of runs and, on a GPU, asynchronous work when your
# notebook is graded.
### BEGIN HIDDEN TESTS
import numbers


def _time_answer(fn, repeats, what):
    with exclusive_gpu():  # under the grader, no other notebook's measurement pauses this one meanwhile
        ms = call_answer(time_gpu, fn, repeats=repeats)
    if not isinstance(ms, numbers.Real) or isinstance(ms, bool):
        raise CheckFailed(f"time_gpu returned a {type(ms).__name__} for {what}: return one number, "
                          "the median in milliseconds.")
    return float(ms)


for seconds in [0.005, 0.03]:
    ms = _time_answer(lambda: time.sleep(seconds), 3, f"a {seconds * 1e3:.0f} ms sleep")
    if 0.9 * seconds <= ms <= 3 * seconds:
        raise CheckFailed(f"time_gpu says {ms:.4g} for a {seconds * 1e3:.0f} ms sleep: that looks like "
                          "seconds. Return milliseconds: (time.perf_counter() - start) * 1e3.")
    if not 0.9 * seconds * 1e3 <= ms <= 3 * seconds * 1e3 + 5:
        raise CheckFailed(f"time_gpu says {ms:.4g} ms for a function that sleeps {seconds * 1e3:.0f} "
                          "ms: return the median of the runs in milliseconds.")

calls = []


def _counted():
    calls.append(1)
    time.sleep(0.002)


_time_answer(_counted, 7, "a counted function")
if len(calls) < 7:
    raise CheckFailed(f"time_gpu(fn, repeats=7) called fn {len(calls)} time(s): run fn `repeats` "
                      "times (plus one warm-up call) and take the median of the timed runs.")

calls = []


def _one_slow_run():
    calls.append(1)
    time.sleep(0.2 if len(calls) == 4 else 0.005)  # one run in seven is 40 times slower


ms = _time_answer(_one_slow_run, 7, "a function with one slow run")
if ms > 15:
    raise CheckFailed(f"Six of seven runs took 5 ms and one took 200 ms, and time_gpu says {ms:.4g} "
                      "ms: return the median of the runs (np.median), which ignores a stray slow "
                      "run, not the mean or the total.")

if ON_GPU:
    def _event_ms(fn):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    _event_ms(lambda: torch.cuda._sleep(1000))
    with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
        probe = 10_000_000  # GPU clock cycles: a few ms; calibrate the spin to about 20 ms
        cycles = int(probe * 20 / _event_ms(lambda: torch.cuda._sleep(probe)))
        reference = _event_ms(lambda: torch.cuda._sleep(cycles))
        ms = _time_answer(lambda: torch.cuda._sleep(cycles), 5, "a GPU kernel")
        torch.cuda.synchronize()
    if ms < 0.1 * reference:
        raise CheckFailed(f"A GPU kernel that runs for {reference:.1f} ms (measured with CUDA events) "
                          f"took {ms:.4g} ms by time_gpu: the clock stopped when the kernel was "
                          "queued, not when it finished. Did you call torch.cuda.synchronize() "
                          "before reading the clock?")
    if not 0.5 * reference <= ms <= 1.5 * reference:
        raise CheckFailed(f"A GPU kernel that runs for {reference:.1f} ms (measured with CUDA events) "
                          f"took {ms:.4g} ms by time_gpu: synchronize before starting the clock and "
                          "before reading it, time only fn(), and return the median in milliseconds.")
print("time_gpu passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# Try your timer on the matrix multiplication above and compare it with the kit's `bench_ms` (CUDA
# events, many runs). On a GPU the two should agree within a few percent. (Not graded.)

# %%
mine, kits = call_answer(time_gpu, lambda: a @ b), bench_ms(lambda: a @ b)
print(f"{n}x{n} matmul: time_gpu {mine:.3f} ms, bench_ms {kits:.3f} ms")
if ON_GPU and not 0.5 < mine / kits < 2:
    print("These disagree by more than 2x: check that time_gpu synchronizes before reading the clock.")


# %% [markdown]
# ## 5. When does the GPU win?
#
# Now the experiment. We time one element-wise operation (`x + y`) and one matrix multiplication
# (`x @ y`) at many sizes, four ways:
#
# 1. **NumPy on the CPU.** Know what this measures: NumPy's element-wise operations run on **one
#    core** (one thread), however many the CPU has; only its matrix multiplication, which it hands
#    to a BLAS library, uses several.
# 2. **torch on the CPU**, which spreads element-wise work over several threads
#    (`torch.get_num_threads()` of them; the legend says how many): the CPU with all the cores
#    torch was given, a fairer opponent for a GPU.
# 3. **torch on the GPU**, inputs already on the GPU;
# 4. **torch on the GPU including the copies**: inputs start as NumPy arrays in CPU memory, are
#    copied to the GPU, and the result is copied back, as a program that "just uses the GPU for this
#    one step" would have to do.
#
# (With no GPU there are only the first two.) Before measuring, predict. A GPU launch costs
# microseconds whatever the size. NumPy on 1000 numbers costs about a microsecond, most of it the
# price of the call itself (checking the arguments, allocating the result), not the additions. So
# small problems should favour the CPU. At large sizes the GPU's far larger bandwidth and arithmetic
# should win. Somewhere in between the lines cross: that size is the **crossover**.
#
# ## Exercise 2: find the crossover (3 points)
#
# Measurements are noisy: near the crossover the GPU may win at one size, lose at the next, and
# win again. Define the crossover as **the smallest size from which the GPU is faster at that size
# and at every larger size measured** ("strictly faster": a tie is not a win). Write
# `crossover(sizes, cpu_ms, gpu_ms)`: the three arguments are Python lists of the same length (what
# the measurements below produce), at least one element long, and `sizes` increases. Return that
# size (an element of `sizes`, not its index), or `None` when the GPU is not faster at the largest
# size.

# %% nbgrader={"grade_id": "crossover", "solution": true}
def crossover(sizes, cpu_ms, gpu_ms):
    """The smallest size from which gpu_ms < cpu_ms at that size and every larger one, else None."""
    ### BEGIN SOLUTION
    found = None
    for size, cpu, gpu in reversed(list(zip(sizes, cpu_ms, gpu_ms))):
        if not gpu < cpu:
            break
        found = size
    return found
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_crossover", "locked": true, "points": 1}
sizes = [1000, 2000, 4000, 8000, 16000]
got = call_answer(crossover, sizes, [1, 2, 4, 8, 16], [5, 5, 5, 5, 5])
if got != 8000:
    raise CheckFailed(f"crossover returned {got!r}, expected 8000: the GPU takes 5 ms everywhere and "
                      "the CPU takes 1, 2, 4, 8, 16 ms, so the GPU is faster from 8000 on. Return "
                      "the size (an element of sizes), not its index.")
print("crossover found the size where the GPU starts to win.")


# %% nbgrader={"grade": true, "grade_id": "test_crossover_hidden", "locked": true, "points": 2}
# Hidden tests check crossover on noisy measurements, and when the GPU always or never wins.
### BEGIN HIDDEN TESTS
def _check_crossover(sizes, cpu, gpu, expected, why):
    got = call_answer(crossover, sizes, cpu, gpu)
    if got != expected:
        raise CheckFailed(f"crossover({sizes}, cpu_ms={list(cpu)}, gpu_ms={list(gpu)}) returned "
                          f"{got!r}, expected {expected!r}: {why}")


sizes = [2**k for k in range(10, 16)]
_check_crossover(sizes, [1, 10, 1, 10, 10, 10], [5] * 6, 2**13,
                 "the GPU wins at 2048 but loses again at 4096, so it only wins for good from 8192: "
                 "the crossover is where the GPU is faster at that size and every larger one.")
_check_crossover(sizes, [1, 10, 10, 10, 10, 1], [5] * 6, None,
                 "the GPU loses at the largest size, so it never wins for good: return None.")
_check_crossover(sizes, [9] * 6, [1] * 6, 2**10,
                 "the GPU is faster at every size: the crossover is the first size.")
_check_crossover(sizes, [1] * 6, [9] * 6, None, "the GPU is never faster: return None.")
_check_crossover(sizes, [1, 2, 3, 4, 5, 6], [6, 6, 6, 6, 6, 6], None,
                 "at the largest size both take 6 ms: a tie is not a win, so return None.")
_check_crossover(sizes, [1, 2, 3, 4, 5, 7], [6, 6, 6, 6, 6, 6], 2**15,
                 "the GPU is faster only at the largest size.")
_check_crossover([1000], [2.0], [1.0], 1000, "one size, where the GPU is faster: that size.")
_check_crossover([1000], [1.0], [2.0], None, "one size, where the GPU is slower: None.")
print("crossover passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# Now measure. `compare` runs an operation on NumPy arrays and on torch tensors of each size, with
# your `time_gpu` (or the kit's `bench_ms` until `time_gpu` works). On a GPU this takes about a
# minute: the CPU is slow on the largest sizes.

# %%
import operator

try:
    call_answer(time_gpu, lambda: None, repeats=2)
    timer = time_gpu
except CheckFailed as error:
    print(f"{error}\nUntil then, the measurements below use the kit's bench_ms.")

    def timer(fn, repeats=None):
        return bench_ms(fn)

WHERE = torch.cuda.get_device_name() if ON_GPU else "CPU"
NUMPY, TORCH_CPU = "NumPy on the CPU", f"torch on the CPU ({torch.get_num_threads()} threads)"
GPU, WITH_COPIES = f"torch on the {WHERE}", "torch on the GPU, with copies to and from it"
rng = np.random.default_rng()


def compare(op, sizes, shape_of):
    """Median ms of op at each size, each way: {way: [ms at each size]} (the GPU ways only on a GPU)."""
    times = {way: [] for way in ([NUMPY, TORCH_CPU] + ([GPU, WITH_COPIES] if ON_GPU else []))}
    for size in sizes:
        xn = rng.random(shape_of(size), dtype=np.float32)
        yn = rng.random(shape_of(size), dtype=np.float32)
        xc, yc = torch.from_numpy(xn), torch.from_numpy(yn)  # torch tensors on NumPy's memory
        runs = {NUMPY: lambda: op(xn, yn), TORCH_CPU: lambda: op(xc, yc)}
        if ON_GPU:
            xt, yt = xc.to(DEVICE), yc.to(DEVICE)
            runs[GPU] = lambda: op(xt, yt)
            runs[WITH_COPIES] = lambda: op(xc.to(DEVICE), yc.to(DEVICE)).cpu()
        repeats = 10 if xn.size < 2**22 else 3
        for way, run in runs.items():
            times[way].append(timer(run, repeats=repeats))
    return times


add_sizes = sized([2**k for k in range(10, 27)], [2**k for k in range(10, 23)])
matmul_sizes = sized([2**k for k in range(4, 12)], [2**k for k in range(4, 10)])
add_times = compare(operator.add, add_sizes, lambda n: n)
matmul_times = compare(operator.matmul, matmul_sizes, lambda n: (n, n))
for name, sizes, times in [("x + y", add_sizes, add_times), ("x @ y", matmul_sizes, matmul_times)]:
    print(f"{name}: median ms  ({', '.join(times)})")
    for size, *row in zip(sizes, *times.values()):
        print(f"  {size:>9}: " + "  ".join(f"{t:10.4f}" for t in row))
if not ON_GPU:
    print("No GPU: only the CPU ways. The plot marks where torch's threads start to beat NumPy's one "
          "core, a crossover of its own.")

# %% [markdown]
# The plot: time against size on log-log axes, one line per way, and your crossovers as dotted
# lines: where torch on the GPU starts to beat NumPy, and where it starts to beat torch on the CPU
# (with no GPU: where torch's threads start to beat NumPy's one core). On log-log axes a cost that
# grows in proportion to the size is a straight line of slope 1 (slope 3 for a matrix
# multiplication against its side), and a fixed cost is a flat line.

# %%
RACES = [(GPU, NUMPY), (GPU, TORCH_CPU)] if ON_GPU else [(TORCH_CPU, NUMPY)]  # (challenger, CPU way)


def crossovers(sizes, times):
    """{(challenger, CPU way): your crossover(...)} for each race, or {} while crossover is a stub."""
    try:
        return {(fast, slow): crossover(list(sizes), times[slow], times[fast]) for fast, slow in RACES}
    except NotImplementedError:
        print("(Write crossover in exercise 2 to see the crossovers marked.)")
        return {}


def plot_times(ax, sizes, times, xlabel, title):
    """Time against size, log-log, one line per way, with the crossovers marked."""
    for label, ms in times.items():
        ax.plot(sizes, ms, marker="o", markersize=4, label=label)
    for ((fast, slow), where), style in zip(crossovers(sizes, times).items(), (":", "-.")):
        if where is not None:
            ax.axvline(where, color="grey", linestyle=style,
                       label=f"{fast.split(' (')[0]} beats {slow.split(' (')[0]} from {where}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("median time (ms)")
    ax.set_title(title + ("" if ON_GPU else "\n(no GPU: the CPU ways only)"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5))
plot_times(left, add_sizes, add_times, "elements", "x + y, fp32")
plot_times(right, matmul_sizes, matmul_times, "matrix side n (n x n matrices)", "x @ y, fp32")
plt.show()

# Your own figures, the ones the reading below is about.
for name, sizes, times in [("x + y", add_sizes, add_times), ("x @ y", matmul_sizes, matmul_times)]:
    smallest, largest = {way: ms[0] for way, ms in times.items()}, {way: ms[-1] for way, ms in times.items()}
    print(f"{name}: at {sizes[0]}, " + ", ".join(f"{way} {ms * 1e3:.3g} us" for way, ms in smallest.items()))
    for fast, slow in RACES:
        print(f"  at {sizes[-1]}, {fast} is {largest[slow] / largest[fast]:.3g}x as fast as {slow}")
    if ON_GPU:
        print(f"  at {sizes[-1]}, the copies make the GPU {largest[WITH_COPIES] / largest[GPU]:.3g}x slower; "
              f"with them it is {largest[NUMPY] / largest[WITH_COPIES]:.3g}x as fast as NumPy")


# %% [markdown]
# **Reading the plot.** Check each point against the figures printed under your plot. (With no GPU
# there are only the two CPU lines, and the same reasoning explains where torch's threads overtake
# NumPy's one core: starting threads has a fixed cost too.)
#
# - **Small sizes: the CPU wins.** The GPU line is flat on the left: every call costs a kernel
#   launch and a synchronization, whatever the size. That is the GPU's *latency*. NumPy on a few
#   thousand numbers costs little more than its own call overhead, about a microsecond. (On a GPU
#   machine your plot shows more, about 12 us on an H200: `time_gpu` calls
#   `torch.cuda.synchronize()` around every run, and that call costs microseconds even when the GPU
#   has nothing to finish. The CPU lines carry that cost too; it is the same for every size.)
# - **Large sizes: the GPU wins, by a lot.** Once the work is large enough to fill the GPU, its
#   time grows with the size at the GPU's *throughput*. Compare the two ratios printed for `x + y`:
#   against NumPy's one core, and against torch's CPU threads, which narrow the gap but do not
#   close it, because the GPU's memory is many times faster than the CPU's. For matrix
#   multiplication much smaller sizes already win, because there is far more work per number.
# - **Copies change the story for `x + y`.** Copying the inputs to the GPU and the result back
#   crosses PCIe, slower than the CPU's own memory, for every byte. An element-wise operation does
#   one addition per 12 bytes, so copying costs more than the CPU would have spent computing: with
#   the copies, the GPU rarely beats NumPy at all. A matrix multiplication does `2n^3` operations
#   on `3n^2` numbers, about `2n/3` operations per number moved, so for large `n` the arithmetic
#   dwarfs the copies, and the GPU still wins. This is why real programs keep their data on the
#   GPU for the whole computation.
#
# For reference, on an H200: a small `x + y` costs 19 to 25 microseconds timed this way, whatever
# its size, and 2^26 elements take about 0.20 ms (about 4000 GB/s).
#
# ## 6. Bytes and operations: arithmetic intensity
#
# The two operations behave so differently because of the ratio of arithmetic to memory traffic,
# the **arithmetic intensity**:
#
# $$\text{intensity} = \frac{\text{floating-point operations (FLOPs)}}{\text{bytes moved to and from memory}}
# \quad\text{(FLOP/byte)}$$
#
# - `x + y` on `n` fp32 numbers: `n` FLOPs; it reads two arrays and writes one, `3 * n * 4` bytes.
#   Intensity 1/12, whatever `n`.
# - `x @ y` for `n x n` fp32 matrices: `2 * n^3` FLOPs (a multiply and an add for each of the `n`
#   terms of each of the `n^2` outputs), and at best reads two matrices and writes one, `3 * n^2 * 4`
#   bytes. Intensity `n / 6`: 683 FLOP/byte for `n = 4096`.
#
# A device does at most `peak` FLOP/s and moves at most `bandwidth` bytes/s. A kernel of intensity
# `I` can therefore reach at most `min(peak, I * bandwidth)` FLOP/s. Drawn against `I` on log-log
# axes, that is a slanted line (memory-bound) meeting a flat one (compute-bound): the **roofline**.
# They meet at the **ridge point**, intensity `peak / bandwidth`. A kernel to the left of the ridge
# is **memory-bound**: faster arithmetic would not help, only moving fewer bytes. A kernel to the
# right is **compute-bound**.
#
# ## Exercise 3: the roofline in three functions (5 points)
#
# Write:
#
# 1. `bytes_moved(n, dtype, reads, writes)`: the bytes an element-wise operation moves when it
#    reads `reads` arrays and writes `writes` arrays of `n` elements of torch dtype `dtype`, each
#    element once. `dtype` may be any torch dtype, floating point or integer: `dtype.itemsize` is
#    the size of one element in bytes (4 for `torch.float32`, 2 for `torch.float16`, 1 for
#    `torch.int8`, 8 for `torch.int64`).
# 2. `arithmetic_intensity(flops, nbytes)`: FLOPs per byte.
# 3. `bound(flops, nbytes, peak_flops, bandwidth)`: `"memory"` if the intensity is below the ridge
#    point `peak_flops / bandwidth`, else `"compute"`. (`peak_flops` in FLOP/s and `bandwidth` in
#    bytes/s: the units cancel in the comparison.)

# %% nbgrader={"grade_id": "roofline", "solution": true}
def bytes_moved(n, dtype, reads, writes):
    """Bytes moved by reading `reads` and writing `writes` arrays of n elements of `dtype`, once each."""
    ### BEGIN SOLUTION
    return n * dtype.itemsize * (reads + writes)
    ### END SOLUTION


def arithmetic_intensity(flops, nbytes):
    """FLOPs per byte moved."""
    ### BEGIN SOLUTION
    return flops / nbytes
    ### END SOLUTION


def bound(flops, nbytes, peak_flops, bandwidth):
    """"memory" if the intensity is below the ridge point peak_flops / bandwidth, else "compute"."""
    ### BEGIN SOLUTION
    ridge = peak_flops / bandwidth
    return "memory" if arithmetic_intensity(flops, nbytes) < ridge else "compute"
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_bytes_moved", "locked": true, "points": 1}
got = call_answer(bytes_moved, 1000, torch.float32, reads=2, writes=1)
if got == 3000:
    raise CheckFailed("bytes_moved(1000, torch.float32, reads=2, writes=1) returned 3000: that counts "
                      "elements. Multiply by the size of one element in bytes (dtype.itemsize, 4 for "
                      "fp32).")
if got != 12000:
    raise CheckFailed(f"bytes_moved(1000, torch.float32, reads=2, writes=1) returned {got!r}, expected "
                      "12000: 3 arrays (2 read, 1 written) of 1000 elements of 4 bytes.")
print("bytes_moved counts x + y on 1000 fp32 elements as 12000 bytes.")
### BEGIN HIDDEN TESTS
for n, dtype, reads, writes in [(1, torch.float16, 1, 1), (12345, torch.bfloat16, 2, 1),
                                (7, torch.float64, 3, 2), (2**20, torch.int8, 1, 0),
                                (999, torch.int64, 0, 1), (2**26, torch.float32, 10, 1)]:
    got = call_answer(bytes_moved, n, dtype, reads=reads, writes=writes)
    want = n * torch.empty((), dtype=dtype).element_size() * (reads + writes)
    if got != want:
        raise CheckFailed(f"bytes_moved({n}, {dtype}, reads={reads}, writes={writes}) returned {got!r}, "
                          f"expected {want}: n x (bytes per element of this dtype) x (reads + writes).")
print("bytes_moved passed the hidden tests.")
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_arithmetic_intensity", "locked": true, "points": 1}
got = call_answer(arithmetic_intensity, 1000, 12000)
if got is None or not math.isclose(got, 1 / 12):
    raise CheckFailed(f"arithmetic_intensity(1000, 12000) returned {got!r}, expected 1/12 = 0.0833: "
                      "FLOPs divided by bytes (not bytes by FLOPs).")
print("arithmetic_intensity gives x + y on fp32 1/12 FLOP per byte.")
### BEGIN HIDDEN TESTS
for flops, nbytes in [(2 * 4096**3, 3 * 4096**2 * 4), (1, 1), (5, 2**40), (10**15, 3)]:
    got = call_answer(arithmetic_intensity, flops, nbytes)
    if got is None or not math.isclose(got, flops / nbytes, rel_tol=1e-9):
        raise CheckFailed(f"arithmetic_intensity({flops}, {nbytes}) returned {got!r}, expected "
                          f"{flops / nbytes:.6g}: FLOPs divided by bytes, as a float (not //).")
print("arithmetic_intensity passed the hidden tests.")
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_bound", "locked": true, "points": 1}
H200 = dict(peak_flops=67e12, bandwidth=4.8e12)  # fp32 FLOP/s and bytes/s: ridge at 14 FLOP/byte
n = 2**26
for what, flops, nbytes, expected in [("x + y on 2^26 fp32", n, 12 * n, "memory"),
                                      ("a 4096 x 4096 fp32 matmul", 2 * 4096**3, 12 * 4096**2, "compute")]:
    got = call_answer(bound, flops, nbytes, **H200)
    if got not in ("memory", "compute"):
        raise CheckFailed(f"bound returned {got!r}: return exactly the string 'memory' or 'compute'.")
    if got != expected:
        raise CheckFailed(f"bound says {what} (intensity {flops / nbytes:.3g} FLOP/byte) is {got}-bound "
                          "on an H200 (ridge point 67e12 / 4.8e12 = 14 FLOP/byte): below the ridge a "
                          "kernel is memory-bound, above it compute-bound. Is your comparison the "
                          "right way round, with ridge = peak_flops / bandwidth?")
print("bound: x + y is memory-bound and a large matmul compute-bound on an H200.")

# %% nbgrader={"grade": true, "grade_id": "test_bound_hidden", "locked": true, "points": 2}
# Hidden tests check bound on other devices, on both sides of the ridge point.
### BEGIN HIDDEN TESTS
import random

_devices = [(8.1e12, 320e9, "a T4"), (19.5e12, 2.0e12, "an A100"), (67e12, 4.2e12, "an H200"),
            (989e12, 4.8e12, "an H200's bf16 tensor cores"), (2e12, 200e9, "a CPU")]
for peak, bandwidth, device in _devices:
    ridge = peak / bandwidth
    for _ in range(10):
        for side, factor in [("memory", 10 ** random.uniform(-3, -0.05)),
                             ("compute", 10 ** random.uniform(0.05, 3))]:
            nbytes = random.randint(1, 2**34)
            flops = ridge * factor * nbytes
            got = call_answer(bound, flops, nbytes, peak, bandwidth)
            if got != side:
                raise CheckFailed(
                    f"bound(flops={flops:.4g}, nbytes={nbytes}, peak_flops={peak:.3g}, "
                    f"bandwidth={bandwidth:.3g}) returned {got!r}, expected {side!r}: on {device} "
                    f"the ridge point is {ridge:.3g} FLOP/byte and this kernel's intensity is "
                    f"{flops / nbytes:.3g}. Below the ridge: 'memory'; above: 'compute'.")
print("bound passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 7. The roofline of this device
#
# Now place `x + y` and a large matrix multiplication on the roofline of the machine you are on.
# The memory ceiling is the copy bandwidth that the kit measures (`copy_bandwidth()`, in GB/s). For
# the compute ceiling we use the datasheet's fp32 peak when we know this GPU, else the speed of a
# large torch matrix multiplication. (On a GPU, torch multiplies fp32 matrices with plain fp32
# arithmetic by default. Its *tensor cores*, which compute in tf32, fp16 or bf16, are 7 to 15 times
# faster on an H200, and move the ridge point as far to the right.)

# %%
# fp32 TFLOP/s (no tensor cores) from NVIDIA's datasheets. Variants of one chip differ in clocks and
# power: an "H100 PCIe" is not an H100 SXM, whose name is plain "NVIDIA H100 80GB HBM3".
DATASHEET_FP32_TFLOPS = {"H200": 67, "H200 NVL": 60, "H100": 67, "H100 PCIe": 51, "H100 NVL": 60,
                         "A100": 19.5, "L40S": 91.6, "L40": 90.5, "L4": 30.3, "A10G": 31.2, "T4": 8.1,
                         "V100": 15.7, "V100-PCIE": 14}


def datasheet_model(name):
    """The most specific model of the table in this device's name ("H100 NVL" before "H100", "L40S"
    before "L40" and "L4"), or None."""
    found = [model for model in DATASHEET_FP32_TFLOPS if model.lower() in name.lower()]
    return max(found, key=len, default=None)


def fp32_peak():
    """(FLOP/s, where the number comes from) for this device."""
    model = datasheet_model(torch.cuda.get_device_name()) if ON_GPU else None
    if model:
        return DATASHEET_FP32_TFLOPS[model] * 1e12, f"{model} datasheet"
    m = sized(8192, 1024)
    a, b = torch.rand(m, m, device=DEVICE), torch.rand(m, m, device=DEVICE)
    return 2 * m**3 / (timer(lambda: a @ b, repeats=3) * 1e-3), f"measured {m}x{m} matmul"


bandwidth = copy_bandwidth() * 1e9  # bytes/s
peak, peak_source = fp32_peak()
print(f"ceilings: memory {bandwidth / 1e9:.4g} GB/s (measured copy), compute {peak / 1e12:.3g} "
      f"TFLOP/s ({peak_source}); ridge point {peak / bandwidth:.3g} FLOP/byte")

points = {}
n = sized(2**26, 2**22)
x, y = torch.rand(n, device=DEVICE), torch.rand(n, device=DEVICE)
points["x + y"] = (n, call_answer(bytes_moved, n, torch.float32, reads=2, writes=1), timer(lambda: x + y))
m = sized(4096, 512)
a, b = torch.rand(m, m, device=DEVICE), torch.rand(m, m, device=DEVICE)
points[f"{m}x{m} matmul"] = (2 * m**3, call_answer(bytes_moved, m * m, torch.float32, reads=2, writes=1),
                             timer(lambda: a @ b, repeats=5))
for what, (flops, nbytes, ms) in points.items():
    print(f"{what:>16}: intensity {call_answer(arithmetic_intensity, flops, nbytes):8.3f} FLOP/byte, "
          f"{call_answer(bound, flops, nbytes, peak, bandwidth)}-bound, reached {flops / (ms * 1e-3) / 1e9:9.4g} "
          f"GFLOP/s ({gbps(nbytes, ms):7.4g} GB/s)")
if not ON_GPU:
    print("No GPU: these ceilings and points describe this CPU, roughly (the copy is small enough "
          "to stay in cache), not a GPU.")


# %%
def plot_roofline(peak, bandwidth, points):
    """Attainable FLOP/s against intensity (the two ceilings), and measured points."""
    intensity = np.logspace(-2, 4, 300)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(intensity, np.minimum(peak, intensity * bandwidth) / 1e9, color="black",
            label="roofline: min(peak, intensity x bandwidth)")
    ridge = peak / bandwidth
    ax.axvline(ridge, color="grey", linestyle=":", label=f"ridge point: {ridge:.1f} FLOP/byte")
    for what, (flops, nbytes, ms) in points.items():
        ax.scatter(arithmetic_intensity(flops, nbytes), flops / (ms * 1e-3) / 1e9, s=60, zorder=3,
                   label=f"{what} (measured)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"Roofline of {WHERE}" if ON_GPU else "Roofline of this CPU (no GPU here)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    plt.show()


plot_roofline(peak, bandwidth, points)

# %% [markdown]
# Read your printout: `x + y`, at 1/12 FLOP/byte, sits far to the left of this device's ridge
# point, on the slanted memory ceiling. It reaches a tiny fraction of the arithmetic peak while
# moving data at about the speed of a copy. The large matrix multiplication, at `n / 6` FLOP/byte,
# sits to the right, under the flat compute ceiling. (For reference, on an H200: ridge point
# 67e12 / 4.15e12 = 16 FLOP/byte; `x + y` reaches about 330 GFLOP/s, half a percent of the peak.)
#
# That is the lesson of this course in one picture: **most kernels live left of the ridge**
# (element-wise operations, reductions, normalisations, softmax), so their speed is set by the
# bytes they move. A Triton kernel speeds them up not by computing faster but by moving fewer bytes,
# for instance by *fusing* several operations into one pass over memory (lesson 04).
#
# ## Exercise 4: your timer sees the memory wall (2 points)
#
# No new code. `x + y` is memory-bound, so timed correctly it moves about as many bytes per second
# as a copy. This test times `x + y` on 2^26 fp32 elements **with your `time_gpu`** and expects, on
# a GPU, at least **50% of this device's copy bandwidth**, and no more than is physically possible
# (a timer that does not wait for the GPU reports impossible speeds). Under the interpreter it only
# prints the numbers. (Why any GPU can pass: the target is a fraction of the same device's copy,
# and `x + y` is memory-bound everywhere. On a T4, 320 GB/s of GDDR6 against 8.1 TFLOP/s, the
# ridge point is 25 FLOP/byte and `x + y` is at 1/12, so torch's kernel runs at about the copy's
# speed there too; a timer adds microseconds to a call of several milliseconds.)

# %% nbgrader={"grade": true, "grade_id": "test_add_bandwidth", "locked": true, "points": 2}
n = sized(2**26, 2**16)
x, y = rand(n), rand(n)
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    ms = call_answer(time_gpu, lambda: x + y, repeats=20)
    roof = copy_bandwidth()
achieved = gbps(3 * n * x.element_size(), ms)
if ON_GPU and achieved > 2 * roof:
    raise CheckFailed(f"Timed by your time_gpu, x + y moved {achieved:.0f} GB/s, more than twice this "
                      f"GPU's copy bandwidth ({roof:.0f} GB/s): impossible. Your timer stops before "
                      "the GPU finishes: call torch.cuda.synchronize() before reading the clock.")
if ON_GPU and achieved < 0.5 * roof:
    raise CheckFailed(f"Timed by your time_gpu, x + y moved only {achieved:.0f} GB/s, under half of this "
                      f"GPU's copy bandwidth ({roof:.0f} GB/s). Does your timer do extra work between "
                      "start and stop (a copy to the CPU, .item(), printing, allocating)? Time only fn().")
check_bandwidth(achieved, 0.5, "x + y timed by your time_gpu")


# %% [markdown]
# ## 8. What a GPU kernel is
#
# A **kernel** is a function that runs on the GPU, executed by many threads at once, each handling a
# piece of the data. Every torch operation you timed above launched one (or a few). Traditionally
# kernels are written in CUDA C++, where you write the code of **one thread**. Vector add,
# `out = x + y`, looks like this:
#
# ```cuda
# __global__ void add(const float* x, const float* y, float* out, int n) {
#     int i = blockIdx.x * blockDim.x + threadIdx.x;   // which element am I?
#     if (i < n) out[i] = x[i] + y[i];                 // don't run past the end
# }
# add<<<(n + 255) / 256, 256>>>(x, y, out, n);          // launch blocks of 256 threads
# ```
#
# That one is easy. Fast kernels for real operations are not: in CUDA you also decide how threads
# share data through on-chip *shared memory*, synchronise them, arrange for the 32 threads of a
# warp to read neighbouring addresses (*coalescing*), split matrices into tiles that fit on chip,
# and avoid bank conflicts, all by hand.
#
# **Triton** works one level up. You write the code of one **program**, which handles a whole
# **block** (tile) of elements with array operations, much like NumPy. You still choose the tiles:
# how the data is split into blocks, and how large they are (`BLOCK_SIZE`). Triton's compiler does
# the rest: it lays each block out over the threads and warps of the program, makes their memory
# accesses coalesced and vectorised, moves data through on-chip shared memory when a block must be
# rearranged, and schedules the instructions. CUDA is thread-based; Triton is block-based. This suits deep learning, whose data
# (matrices, batches, attention maps) naturally comes in blocks. Vector add in Triton:
#
# ```python
# @triton.jit
# def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
#     pid = tl.program_id(axis=0)                            # which block am I?
#     offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # the indices of my block
#     mask = offsets < n_elements                            # don't run past the end
#     x = tl.load(x_ptr + offsets, mask=mask)
#     y = tl.load(y_ptr + offsets, mask=mask)
#     tl.store(out_ptr + offsets, x + y, mask=mask)          # the whole block at once
#
# add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)  # n / 1024 programs, rounded up
# ```
#
# Read it as "each program adds one block of 1024 elements". Line by line (lesson 02 takes each idea
# further, with pictures):
#
# - `@triton.jit` turns the Python function into a kernel, compiled for the GPU the first time it
#   is launched.
# - The **launch** `add_kernel[grid](...)` runs `grid[0]` copies of the kernel, called *programs*,
#   numbered 0, 1, 2, ... To cover `n` elements in blocks of 1024 you need `n / 1024` programs
#   rounded up: `triton.cdiv(n, 1024)`.
# - `tl.program_id(axis=0)` is the number of the program running the code: the only thing that
#   differs between programs.
# - `tl.arange(0, BLOCK_SIZE)` is the block `[0, 1, ..., BLOCK_SIZE - 1]`, and arithmetic on it
#   works element by element, like NumPy: `offsets` are the indices this program handles. Its
#   length must be a power of two known when the kernel is compiled, which is why `BLOCK_SIZE` is
#   declared `tl.constexpr`: Triton compiles one version of the kernel for each value you pass.
# - Tensors passed to a kernel arrive as *pointers* to their first element; `x_ptr + offsets` is a
#   block of addresses, and `tl.load` / `tl.store` move a whole block between memory and the chip.
# - When `n` is not a multiple of 1024, the last program's offsets run past the end of the arrays.
#   `mask = offsets < n_elements` is `False` for those lanes, and a masked load or store leaves
#   them alone: without it, the kernel would read and write memory that is not yours.
#
# ## Exercise 5: your first Triton kernel (3 points)
#
# Finish `scale_kernel`, which computes `out = a * x` for a number `a`: the add kernel above with
# one input instead of two. The first three lines are given (which block, which indices, which of
# them exist); you write the load and the store. A plain Python number passed to a kernel (here
# `a`) arrives as a scalar, and `a * x` multiplies every element of the block `x`. Put the mask on
# the load and on the store. The test launches your kernel on 1000 elements in blocks of 256: four
# programs, the last with only 232 real elements.

# %% nbgrader={"grade_id": "scale_kernel", "solution": true}
@triton.jit
def scale_kernel(x_ptr, out_ptr, a, n_elements, BLOCK_SIZE: tl.constexpr):
    """out[i] = a * x[i] for every i < n_elements. Each program scales one block of BLOCK_SIZE."""
    pid = tl.program_id(axis=0)  # which block am I?
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # the indices of my block
    mask = offsets < n_elements  # which of them exist
    ### BEGIN SOLUTION
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * x, mask=mask)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_scale_kernel", "locked": true, "points": 1}
n, BLOCK_SIZE, scale_by = 1000, 256, 2.5
x = rand(n)
x_before = x.clone()
out = guarded_empty(n)  # sits between guard bands: a write past either end is seen
grid = (triton.cdiv(n, BLOCK_SIZE),)
call_answer(lambda: scale_kernel[grid](x, out, scale_by, n, BLOCK_SIZE=BLOCK_SIZE), name="scale_kernel")
if torch.equal(out, x):
    raise CheckFailed("scale_kernel wrote x unchanged: store a * x, not x.")
check_output(out, scale_by * x, name="scale_kernel", inputs=[(x, x_before)])
print(f"scale_kernel computed {scale_by} * x on {n} elements, and wrote nothing outside them.")


# %% nbgrader={"grade": true, "grade_id": "test_scale_kernel_hidden", "locked": true, "points": 2}
# Hidden tests launch your scale_kernel on more sizes, block sizes, factors and dtypes when your
# notebook is graded.
### BEGIN HIDDEN TESTS
def _check_scale_kernel(n, block, scale_by, dtype=torch.float32):
    x = rand(n, dtype=dtype)
    x_before = x.clone()
    out = guarded_empty(n, dtype=dtype)
    grid = (triton.cdiv(n, block),)
    call_answer(lambda: scale_kernel[grid](x, out, scale_by, n, BLOCK_SIZE=block), name="scale_kernel")
    expected = (scale_by * x.double()).to(dtype)
    check_output(out, expected, name=f"scale_kernel with n={n}, BLOCK_SIZE={block}, a={scale_by}, {dtype}",
                 inputs=[(x, x_before)])


for n in [1, 2, 3, 17, 127, 128, 129, 1021, 4099] + sized([1_000_003], []):
    for block in [16, 64, 256, 1024]:
        _check_scale_kernel(n, block, -0.75)
for scale_by in [0.0, 1.0, 3, 1e-3]:
    _check_scale_kernel(257, 128, scale_by)
for dtype in FLOAT_DTYPES:
    for n in [1, 129, 4099]:
        _check_scale_kernel(n, 256, 1.5, dtype)
print("scale_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 9. Where Triton fits
#
# Triton lives in the deep-learning performance world. Picture a ladder, from most convenient to
# most control:
#
# 1. **PyTorch eager**: one pre-written kernel per operation. Easy, and fast for big single
#    operations (a matmul, a convolution), but every operation reads its inputs from memory and
#    writes its output back, and you cannot change how a kernel works.
# 2. **`torch.compile`**: traces your model and *generates Triton kernels for it*, fusing chains of
#    element-wise operations into single passes over memory. This is how most people benefit from
#    Triton: without writing a kernel (set `TORCH_LOGS=output_code` to read the Triton code it
#    writes).
# 3. **Hand-written Triton**: for an operation the compiler does not generate well, or at all. The
#    compiler of rung 2 is good, and getting better: it fuses element-wise chains and reductions;
#    with `mode="max-autotune"` it can run a matrix multiplication as one of its own Triton matmul
#    templates with the work after it fused in (by default it calls cuBLAS); it sends attention
#    written out by hand to `scaled_dot_product_attention`, whose flash kernels are CUDA C++; and
#    FlexAttention compiles attention variants (masks, score modifications) into flash-style
#    Triton kernels. But it only generates what its authors taught it to, and its templates were
#    written by hand, in Triton. People write kernels for a new algorithm (FlashAttention's
#    online softmax was one), a custom data format, or a shape where the generated kernel is slow;
#    lesson 04 measures one: a softmax that beats both torch and `torch.compile` on wide rows.
#    Python syntax, block-level control, performance close to expert CUDA.
# 4. **CUDA C++** (and libraries such as CUTLASS): full control over threads, shared memory and
#    synchronisation, at a large cost in complexity. For the last few percent.
#
# Climb a rung only when a measurement says you must: a profile shows time going to a chain of
# memory-bound operations, or an operation that is missing. And Triton is not "PyTorch but faster":
# a lone `x + y` written in Triton runs at about torch's speed (both are at the memory ceiling,
# as you will measure in lesson 02). The gains come from removing bottlenecks, above all from
# moving fewer bytes.
#
# **Installing.** Triton is a Python package. In a clean environment on Linux with an NVIDIA GPU,
# `pip install torch triton` (recent torch wheels for CUDA already bring the matching Triton).
# Colab has both preinstalled.
#
# ## 10. The mental model shift
#
# Coming from CPU Python, GPU programming asks you to think differently:
#
# - **Think in blocks, not loops.** You do not write `for i in range(n)`: you write what one
#   program does to its block, and launch thousands of programs at once, in no particular order.
# - **Memory movement dominates.** Getting data to and from the GPU, and between its memory tiers
#   (DRAM, on-chip caches and shared memory, registers), is the bottleneck far more often than the
#   arithmetic. Move each byte as few times as possible.
# - **Branches are costly.** Threads run in lockstep warps; divergent `if`s run both paths.
# - **Measure carefully.** GPU work is asynchronous: synchronize, warm up, take the median.
#
# ## Exercise 6: multiple choice (3 points)
#
# For each question, set the variable in the cell below it to one letter in quotes, for example
# `answer_q1 = "a"` (upper or lower case, spaces around it do not matter).
#
# **Question 1.** Which best describes Triton's programming model compared to CUDA?
#
# - a) Triton is thread-based; CUDA is block-based.
# - b) Triton uses CPU registers; CUDA uses GPU registers.
# - c) Triton is block-based (tiled); CUDA is thread-based.
# - d) Triton operates only on scalar values.

# %% nbgrader={"grade_id": "quiz_q1", "solution": true}
### BEGIN SOLUTION
answer_q1 = "c"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_quiz_q1", "locked": true, "points": 1}
check_choice(globals().get("answer_q1"), "answer_q1")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_q1, "answer_q1", expected="c",
             why="Triton is block-based: a program handles a whole block (tile) with array operations, "
                 "while a CUDA kernel is written for one thread.")
### END HIDDEN TESTS

# %% [markdown]
# **Question 2.** Triton's compiler automates which of the following complex tasks?
#
# - a) Writing the neural network architecture.
# - b) Downloading datasets from the cloud.
# - c) Visualizing loss curves.
# - d) Inside the block you chose: spreading its work over threads and warps, memory coalescing,
#   the use of shared memory and scheduling (the low-level details CUDA makes you manage by hand).

# %% nbgrader={"grade_id": "quiz_q2", "solution": true}
### BEGIN SOLUTION
answer_q2 = "d"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_quiz_q2", "locked": true, "points": 1}
check_choice(globals().get("answer_q2"), "answer_q2")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_q2, "answer_q2", expected="d",
             why="You choose the blocks; Triton's compiler takes over the low-level work inside "
                 "one (spreading it over threads and warps, coalescing, shared memory, scheduling); "
                 "models, datasets and plots are not its business.")
### END HIDDEN TESTS

# %% [markdown]
# **Question 3.** How do you install Triton in a clean environment?
#
# - a) `pip install torch triton`
# - b) `npm install triton`
# - c) `apt-get install triton-gpu`
# - d) `brew install triton`

# %% nbgrader={"grade_id": "quiz_q3", "solution": true}
### BEGIN SOLUTION
answer_q3 = "a"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_quiz_q3", "locked": true, "points": 1}
check_choice(globals().get("answer_q3"), "answer_q3")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_q3, "answer_q3", expected="a",
             why="Triton is a Python package, installed with pip next to torch; it is not an npm, "
                 "apt or Homebrew package.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 7: in your own words (4 points)
#
# Answer each question in a few sentences in the cell below it. These are graded by a person.
#
# **Question 4.** Explain why a GPU suits matrix multiplication but not a branchy, sequential
# algorithm.

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_gpu_vs_branchy", "points": 2, "solution": true}
# ### BEGIN SOLUTION
# Matrix multiplication is `n^2` independent dot products made of `2n^3` identical multiply-adds
# with no branches: the work splits into thousands of pieces that all run the same instructions on
# different data, exactly what SIMT warps of 32 lockstep threads and thousands of parallel lanes
# are built for, and it does enough arithmetic per byte (about `n / 6` FLOP/byte) to keep them
# busy. A sequential algorithm has one chain of dependent steps, so the parallel lanes sit idle and
# each GPU lane is slower than a CPU core; and in branchy code the threads of a warp diverge, so
# the warp executes every path one after the other with part of its lanes switched off. A CPU
# core, with high clock speed, branch prediction, out-of-order execution and large caches, is built
# to minimise the latency of exactly that kind of code.
# ### END SOLUTION

# %% [markdown]
# **Question 5.** In your plot of `x + y`, NumPy wins at small sizes and the GPU at large sizes.
# Explain both ends with latency and throughput, and explain why including the copies to and from
# the GPU hurts `x + y` much more than the matrix multiplication.

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_crossover", "points": 2, "solution": true}
# ### BEGIN SOLUTION
# At small sizes the time is dominated by fixed costs, the GPU's latency: launching a kernel and
# waiting for it costs about 20 microseconds whatever the size, while NumPy adds a few thousand
# numbers in a microsecond or two, most of it the cost of its call. The GPU line is flat there. At
# large sizes the fixed cost is negligible and time is set by throughput: the GPU's memory
# bandwidth (about 4 TB/s on an H200) is ten or more times the CPU's, so the GPU wins by about that
# factor (against NumPy's one core by even more; torch's CPU threads narrow the gap). The crossover
# is where the GPU's fixed cost equals the time its higher throughput saves. Copies move every
# byte over PCIe (tens of GB/s, slower than the CPU's own memory): `x + y` does only one FLOP per
# 12 bytes, so copying its data costs more than the CPU needs to just compute it, and the GPU
# rarely wins. A matmul does `2n^3` FLOPs on `3n^2` numbers, about `2n/3` per number moved, so for
# large `n` the `n^3` arithmetic dwarfs the `n^2` copy and the GPU still wins. Data should stay on
# the GPU.
# ### END SOLUTION

# %% [markdown]
# ## What you learned
#
# - A CPU has a few fast cores built for **latency**; a GPU has thousands of simple lanes built for
#   **throughput**, running threads in lockstep **warps** of 32 (SIMT). It hides memory latency
#   with parallelism, so it needs large problems.
# - **Sequential** and **branchy** code suits the CPU: a dependent chain cannot use parallel lanes,
#   and divergent branches make a warp run every path.
# - GPU work is **asynchronous**: time it with `torch.cuda.synchronize()` before starting and
#   before reading the clock (or CUDA events), after a warm-up, and report the median.
# - The GPU has a fixed cost per operation (microseconds), so the CPU wins small problems and the
#   GPU large ones; the **crossover** depends on the work per byte. Copies between CPU and GPU are
#   expensive: keep data on the GPU.
# - **Arithmetic intensity** (FLOP/byte) against the **ridge point** (peak / bandwidth) says
#   whether a kernel is **memory-bound** or **compute-bound**; most kernels other than matrix
#   multiplication are memory-bound, so bytes moved set their speed.
# - A **kernel** is a function run by many threads on the GPU. CUDA is thread-based; **Triton is
#   block-based**: you choose the blocks and write what one program does with its block; its
#   compiler spreads the block over threads, coalesces memory accesses, uses shared memory and
#   schedules the work. Most people use Triton through `torch.compile`; hand-written Triton is for
#   what the compiler does not generate well: new algorithms, custom formats, shapes it handles
#   poorly.
#
# **Next, lesson 02 (vector add):** your `scale_kernel`, explained line by line: programs and
# blocks, `tl.program_id`, `tl.arange`, pointers, the grid, the mask, and measuring a kernel in
# GB/s against the copy bandwidth.
