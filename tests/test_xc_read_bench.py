"""The XC reading benchmark (``eval.bench.xc_read``) end to end on a small synthetic file: every worker count
and variant reads the same matrices (the benchmark stops otherwise), and a variant that is not a module
constant is refused."""
import pytest

from eval.bench import xc_read


def test_every_worker_count_and_variant_reads_the_same_matrices(capsys):
    xc_read.main(["--points", "3000", "--features", "500", "--labels", "40", "--workers", "1", "2", "3",
                  "--repeats", "1", "--no-peers", "--variant", "caller_waits:@embkit.core.threads.CALLER_WORKS=False"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| embkit read_xc")]
    assert len(rows) == 6 and sum("caller_waits" in row for row in rows) == 3


def test_a_variant_of_keyword_arguments_is_refused():
    with pytest.raises(SystemExit):
        xc_read.main(["--points", "10", "--no-peers", "--variant", "bad:workers=2"])
