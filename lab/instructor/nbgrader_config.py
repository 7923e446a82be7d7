# nbgrader's exchange, through which Release, Fetch, Submit and Collect pass files: for `make lab`
# and `make lab-student` a folder of this checkout (git-ignored), shared by both, so an instructor
# can release and a student fetch and submit on one machine. On a JupyterHub, point it at the
# hub's shared exchange instead (nbgrader's default is /usr/local/share/nbgrader/exchange).
import os

c = get_config()  # noqa: F821 (nbgrader provides get_config)
c.Exchange.root = os.environ.get("COURSE_EXCHANGE") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", "build", "exchange"))
