# The sample class for 02_vector_add, graded by `make demo` and by the tests (see autograder/samples.py).
{
    "ada": {
        "about": "a correct submission",
        "answers": "solution",
        "fails": [],
    },
    "bo": {
        "about": "the release, untouched",
        "answers": "release",
        "fails": ["test_add"],
    },
}
