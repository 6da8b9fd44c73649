"""The scan benchmark (``eval.bench.scan_threads``) end to end on a small corpus: every variant and worker count
scans to the same vocabulary, and the calling thread's CPU seconds are a share of the process's."""
import json

from eval.bench import scan_threads


def test_every_variant_and_worker_count_scans_the_same_vocabulary(tmp_path, capsys):
    corpus = tmp_path / "words.txt"
    corpus.write_text("".join("w%d w%d the a\n" % (i % 50, i % 7) for i in range(3000)), encoding="utf-8")
    out = tmp_path / "runs.json"
    scan_threads.main(["--corpus", str(corpus), "--workers", "1", "2", "4", "--repeats", "2",
                       "--variant", "caller:@embkit.text.scan.PARTED_WORKERS=1000000", "--json", str(out)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert len(lines) == 2 * 2 * 3 and {line["vocabulary"] for line in lines} == {52}
    saved = json.load(open(out))
    assert saved["corpus"] == "words.txt" and len(saved["runs"]) == 12
    assert all(0 <= r["caller_cpu_s"] <= r["process_cpu_s"] + 1e-3 for r in saved["runs"])
    assert saved["summary"][0].startswith("| variant | workers |")
