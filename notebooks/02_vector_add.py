# %% [markdown]
# # Vector add

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %% nbgrader={"solution": true, "grade_id": "add"}
def add(x, y):
    ### BEGIN SOLUTION
    return x + y
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_add", "points": 1, "locked": true}
assert add(1, 2) == 3
### BEGIN HIDDEN TESTS
assert add(2, 2) == 4
### END HIDDEN TESTS
