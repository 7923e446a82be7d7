# The sample class for 01_gpu_vs_cpu, graded by `autograder demo 01_gpu_vs_cpu` and by the tests (see
# autograder/samples.py).
# Every expected failure is the same on a GPU and under the interpreter (a timer that forgets to
# synchronize fails only on a GPU, so it is not a sample). The written_* cells are graded by hand:
# they wait for a person, except in the untouched release, where nbgrader scores an unanswered
# cell 0 at once. Samples marked "ci": False are graded by the demo only; CI keeps a kernel that
# writes past the end (cy) and a wrong timer (dee).
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "bo": {"about": "the release, untouched", "answers": "release",
           "fails": ["test_add_bandwidth", "test_arithmetic_intensity", "test_bound", "test_bound_hidden",
                     "test_bytes_moved", "test_crossover", "test_crossover_hidden", "test_quiz_q1",
                     "test_quiz_q2", "test_quiz_q3", "test_scale_kernel", "test_scale_kernel_hidden",
                     "test_time_gpu", "test_time_gpu_hidden", "written_crossover", "written_gpu_vs_branchy"]},
    "cy": {"about": "scale_kernel without a mask", "answers": "solution",
           "edits": {"scale_kernel": [[", mask=mask)", ")"]]},
           "fails": ["test_scale_kernel", "test_scale_kernel_hidden"]},
    "dee": {"about": "a timer that returns the mean, with no warm-up", "answers": "solution",
            "edits": {"time_gpu": [["    fn()  # warm-up", "    pass  # no warm-up"],
                                   ["float(np.median(runs))", "float(np.mean(runs))"]]},
            "fails": ["test_time_gpu_hidden"]},
    "eve": {"about": "crossover returns the first size where the GPU wins", "answers": "solution",
            "edits": {"crossover": [["        if not gpu < cpu:\n            break\n        found = size",
                                     "        if gpu < cpu:\n            found = size"]]},
            "fails": ["test_crossover_hidden"], "ci": False},
    "fay": {"about": "bound with the ridge point upside down", "answers": "solution",
            "edits": {"roofline": [["ridge = peak_flops / bandwidth", "ridge = bandwidth / peak_flops"]]},
            "fails": ["test_bound", "test_bound_hidden"], "ci": False},
    "gil": {"about": "wrong multiple-choice answers", "answers": "solution",
            "edits": {"quiz_q1": [['"c"', '"a"']], "quiz_q2": [['"d"', '"b"']], "quiz_q3": [['"a"', '"d"']]},
            "fails": ["test_quiz_q1", "test_quiz_q2", "test_quiz_q3"], "ci": False},
}
