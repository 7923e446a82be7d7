# The sample class for 01_gpu_vs_cpu, graded by `autograder demo 01_gpu_vs_cpu` and by the tests (see
# autograder/samples.py).
# Every expected failure is the same on a GPU and under the interpreter (a timer that forgets to
# synchronize fails only on a GPU, so it is not a sample). The written_* cells are graded by hand:
# they wait for a person, except in the untouched release, where nbgrader scores an unanswered
# cell 0 at once. Samples marked "ci": False are graded by the demo only (a kernel that writes past
# the end, cy, has its like in 02's cy, the untouched release in 02's, 05's and 07's bo); CI keeps a
# timer that calls the kit's (hal) and ida, a second correct answer to every exercise,
# written differently from the solutions (tests/test_second_answers.py checks that it covers them),
# which must lose no points: a hidden test that rejects it rejects a valid answer.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct", "answers": "solution", "fails": [],
            "replace": {
                "time_gpu": """import statistics


def time_gpu(fn, repeats=20):
    wait = torch.cuda.synchronize if ON_GPU else (lambda: None)
    fn()
    samples = []
    while len(samples) < repeats:
        wait()
        t0 = time.perf_counter_ns()
        fn()
        wait()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(samples)
""",
                "crossover": """def crossover(sizes, cpu_ms, gpu_ms):
    wins = [gpu < cpu for cpu, gpu in zip(cpu_ms, gpu_ms)]
    if not wins[-1]:
        return None
    first = len(wins)
    while first > 0 and wins[first - 1]:
        first -= 1
    return sizes[first]
""",
                "roofline": """def bytes_moved(n, dtype, reads, writes):
    info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
    return (reads + writes) * n * (info.bits // 8)


def arithmetic_intensity(flops, nbytes):
    return float(flops) / float(nbytes)


def bound(flops, nbytes, peak_flops, bandwidth):
    # intensity < peak / bandwidth, without dividing
    return "memory" if flops * bandwidth < peak_flops * nbytes else "compute"
""",
                "scale_kernel": """@triton.jit
def scale_kernel(x_ptr, out_ptr, a, n_elements, BLOCK_SIZE: tl.constexpr):
    start = tl.program_id(0) * BLOCK_SIZE
    idx = start + tl.arange(0, BLOCK_SIZE)
    inside = idx < n_elements
    tl.store(out_ptr + idx, tl.load(x_ptr + idx, mask=inside, other=0.0) * a, mask=inside)
""",
                "quiz_q1": 'answer_q1 = " C "\n',
                "quiz_q2": "answer_q2 = 'D'\n",
                "quiz_q3": 'answer_q3 = "a "\n',
            }},
    "bo": {"ci": False, "about": "the release, untouched", "answers": "release",
           "fails": ["test_add_bandwidth", "test_arithmetic_intensity", "test_bound", "test_bound_hidden",
                     "test_bytes_moved", "test_crossover", "test_crossover_hidden", "test_quiz_q1",
                     "test_quiz_q2", "test_quiz_q3", "test_scale_kernel", "test_scale_kernel_hidden",
                     "test_time_gpu", "test_time_gpu_hidden", "written_crossover", "written_gpu_vs_branchy"],
           "why": {"test_time_gpu": "time_gpu is still the exercise stub", "test_quiz_q1": "answer_q1 is not set"}},
    "cy": {"ci": False, "about": "scale_kernel without a mask", "answers": "solution",
           "edits": {"scale_kernel": [[", mask=mask)", ")"]]},
           "fails": ["test_scale_kernel", "test_scale_kernel_hidden"],
           "why": {"test_scale_kernel": "past the end",
                   "test_scale_kernel_hidden": "past the end"}},
    "dee": {"ci": False, "about": "a timer that returns the mean, with no warm-up", "answers": "solution",
            "edits": {"time_gpu": [["    fn()  # warm-up", "    pass  # no warm-up"],
                                   ["float(np.median(runs))", "float(np.mean(runs))"]]},
            "fails": ["test_time_gpu_hidden"],
            "why": {"test_time_gpu_hidden": "return the median of the runs (np.median)"}},
    "eve": {"about": "crossover returns the first size where the GPU wins", "answers": "solution",
            "edits": {"crossover": [["        if not gpu < cpu:\n            break\n        found = size",
                                     "        if gpu < cpu:\n            found = size"]]},
            "fails": ["test_crossover_hidden"],
            "why": {"test_crossover_hidden": "returned 2048, expected 8192"}, "ci": False},
    "fay": {"about": "bound with the ridge point upside down", "answers": "solution",
            "edits": {"roofline": [["ridge = peak_flops / bandwidth", "ridge = bandwidth / peak_flops"]]},
            "fails": ["test_bound", "test_bound_hidden"],
            "why": {"test_bound": "Is your comparison the right way round",
                    "test_bound_hidden": "returned 'compute', expected 'memory'"}, "ci": False},
    "gil": {"about": "wrong multiple-choice answers", "answers": "solution",
            "edits": {"quiz_q1": [['"c"', '"a"']], "quiz_q2": [['"d"', '"b"']], "quiz_q3": [['"a"', '"d"']]},
            "fails": ["test_quiz_q1", "test_quiz_q2", "test_quiz_q3"],
            "why": {"test_quiz_q1": "answer_q1 = 'a' is not the right answer",
                    "test_quiz_q2": "answer_q2 = 'b' is not the right answer",
                    "test_quiz_q3": "answer_q3 = 'd' is not the right answer"}, "ci": False},
    "hal": {"about": "time_gpu hands its work to the kit's own timer (bench_ms): exercise 1 not done",
            "answers": "solution",
            "replace": {"time_gpu": "def time_gpu(fn, repeats=20):\n    return bench_ms(fn)\n"},
            "fails": ["test_time_gpu", "test_time_gpu_hidden", "test_add_bandwidth"],
            "why": {"test_time_gpu": "time_gpu calls the kit's bench_ms",
                    "test_time_gpu_hidden": "time_gpu calls the kit's bench_ms",
                    "test_add_bandwidth": "time_gpu calls the kit's bench_ms"}},
    "ivy": {"about": "time_gpu times its runs inside exclusive_gpu(), as the lesson's own measurements "
                     "do: correct (on a GPU grader the tests call it inside their own turn)",
            "answers": "solution",
            "replace": {"time_gpu": ("def time_gpu(fn, repeats=20):\n"
                                     "    fn()\n"
                                     "    runs = []\n"
                                     "    with exclusive_gpu():\n"
                                     "        for _ in range(repeats):\n"
                                     "            if ON_GPU:\n"
                                     "                torch.cuda.synchronize()\n"
                                     "            start = time.perf_counter()\n"
                                     "            fn()\n"
                                     "            if ON_GPU:\n"
                                     "                torch.cuda.synchronize()\n"
                                     "            runs.append((time.perf_counter() - start) * 1e3)\n"
                                     "    return float(np.median(runs))\n")},
            "fails": [], "ci": False},
}
