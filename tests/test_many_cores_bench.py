"""The many-core run (``eval.bench.many_cores``): its thread counts, the commands it gives the scaling benchmark,
and one step end to end on a small corpus."""
import json

from eval.bench import many_cores, scaling


def test_thread_counts_go_by_doubling_up_to_the_cores():
    assert many_cores.thread_counts(16) == [1, 4, 8, 16]
    assert many_cores.thread_counts(12) == [1, 4, 8, 12]
    assert many_cores.thread_counts(2) == [1, 2] and many_cores.thread_counts(1) == [1]


def test_the_scaling_steps_are_commands_the_scaling_benchmark_takes(tmp_path):
    for number, name, argv, needs in many_cores.steps("words.txt", str(tmp_path), 16):
        if argv[1] != "eval.bench.scaling":
            continue
        args = scaling.build_parser().parse_args(argv[2:])
        assert args.corpus == "words.txt" and args.jsonl.startswith(str(tmp_path))
        if name == "embkit":
            assert args.threads == [1, 4, 8, 16] and args.quality_threads == [1, 16] and args.quality_seeds == 3
            assert [v[4] for v in args.variant if v[0] == "none"] == [[4, 16]]
            copying = [t for t in (4, 8, 16) if t >= many_cores.WORD_HOT_FROM_HOLDERS]
            both = [t for t in copying if t >= many_cores.WORD_HOT_INPUTS_FROM_HOLDERS]
            below = [t for t in copying if t < many_cores.WORD_HOT_INPUTS_FROM_HOLDERS and t != 16]
            # the output rows' copies alone where the input rows' are on, the input rows' too where they are off
            assert [v[4] for v in args.variant if v[0] == "outputs"] == [both or [16]]
            assert [v[4] for v in args.variant if v[0] == "inputs"] == ([below] if below else [])
            assert "inputs-half" in {v[0] for v in args.variant}


def test_the_variants_fit_the_cores():
    names = [v.split(":")[0] for v in many_cores.embkit_variants(2)[1::2]]
    assert names == ["none", "outputs", "inputs-half"]                 # no count below the cores to copy at
    assert "none:hot_rows=0,threads=2+4" in many_cores.embkit_variants(2)


def run_step(tmp_path, step):
    """The folder of one step run on the first 1000 lines of a small corpus, on 2 cores."""
    corpus = tmp_path / "words.txt"
    corpus.write_text("".join("w%d w%d the a\n" % (i % 50, i % 7) for i in range(3000)), encoding="utf-8")
    out = tmp_path / "out"
    assert many_cores.main(["--corpus", str(corpus), "--out", str(out), "--cores", "2", "--steps", str(step),
                            "--small", "1000"]) == 0
    return out


def test_a_step_runs_on_the_first_lines_of_the_corpus_into_the_folder(tmp_path):
    out = run_step(tmp_path, 5)
    assert (out / "corpus-1000.txt").read_text(encoding="utf-8").count("\n") == 1000
    saved = json.load(open(out / "scan-threads.json"))
    assert {r["workers"] for r in saved["runs"]} == {1, 2}
    assert {r["variant"] for r in saved["runs"]} == {"", "uncapped", "waiting_caller"}
    assert "step 5 (scan) ended (exit status 0)" in (out / "log.txt").read_text(encoding="utf-8")


def test_the_eight_worker_steps_run_with_and_without_the_frequent_rows_and_four_workers_with_them(tmp_path):
    argv = {name: a for _, name, a, _ in many_cores.steps("words.txt", str(tmp_path), 16)}
    on, off = argv["cluster8"], argv["cluster8-whole"]
    assert on[on.index("--grid") + 1] == "8x2" and on[on.index("--repeat-corpus") + 1] == "11"
    assert "--hot-part-units" not in on and off[off.index("--hot-part-units") + 1] == "0"
    assert on[on.index("--json") + 1] != off[off.index("--json") + 1]
    four = argv["cluster4"]
    assert four[four.index("--grid") + 1] == "4x4" and "--hot-part-units" not in four


def test_the_blas_step_times_both_phases_after_a_product_and_after_the_threads_settle(tmp_path):
    out = run_step(tmp_path, 10)
    saved = json.load(open(out / "blas-spin.json"))
    assert saved["threads"] == 2 and saved["epochs"] == 1
    assert all(lib["num_threads"] == 2 for lib in saved["blas"])     # BLAS gets the threads, whatever the env
    assert set(saved["runs"]) == {"right after a product", "after the threads settle"}
    for runs in saved["runs"].values():
        assert len(runs) == 2 and all(r["vocab_s"] > 0 and r["train_s"] > 0 for r in runs)


def test_the_items_step_times_the_item_copies_beside_the_shared_tables(tmp_path, shared_data, monkeypatch):
    monkeypatch.setenv("EMBKIT_SHARED_DATA", shared_data)
    out = run_step(tmp_path, 11)
    saved = json.load(open(out / "drivers-items-hot.json"))
    assert {(r["workload"], r["variant"], r["threads"]) for r in saved["runs"]} == \
        {("items", v, t) for v in ("", "hot1k", "hotall") for t in (1, 2)}
    assert all(r["train_s"] > 0 for r in saved["runs"])
