import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from vlamb_nb.errors import StoreError
from vlamb_nb.store import PredictionStore, TornLineWarning, read_records, request_key

KEY_ARGS = dict(model_id="m", revision=None, quantization="4bit", benchmark="vague", setting="vlm",
                prompt={"messages": [{"role": "user", "content": "hi"}]}, image_digests=["abc"],
                params={"max_new_tokens": 8})


def test_request_key_changes_with_each_field():
    base = request_key(**KEY_ARGS)
    for field, other in [("model_id", "m2"), ("revision", "r1"), ("quantization", None), ("benchmark", "mucar"),
                         ("setting", "lm"), ("prompt", {"messages": []}), ("image_digests", ["abd"]),
                         ("params", {"max_new_tokens": 9})]:
        assert request_key(**{**KEY_ARGS, field: other}) != base, field


def test_request_key_stable_across_processes():
    code = textwrap.dedent(f"""
        from vlamb_nb.store import request_key
        print(request_key(**{KEY_ARGS!r}))
    """)
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(s)}).stdout.strip() for s in (1, 2)}
    assert outs == {request_key(**KEY_ARGS)}


def test_append_and_resume(tmp_path):
    p = tmp_path / "preds.jsonl"
    with PredictionStore(p, run_meta={"seed": 1}) as st:
        st.append({"key": "a", "text": "x"})
        st.append({"key": "b", "text": "y", "error": "boom"})
    st2 = PredictionStore(p)
    assert st2.keys() == {"a"}  # the failed one is retried on resume
    assert st2.failed_keys() == {"b"}
    assert st2.get("a")["run"] == {"seed": 1}
    with st2:
        st2.append({"key": "b", "text": "ok"})
    st3 = PredictionStore(p)
    assert st3.keys() == {"a", "b"} and len(st3) == 2


def test_torn_last_line_dropped_with_warning(tmp_path):
    p = tmp_path / "preds.jsonl"
    with PredictionStore(p) as st:
        st.append({"key": "a", "text": "x"})
    with open(p, "ab") as fh:
        fh.write(b'{"key": "b", "te')
    with pytest.warns(TornLineWarning):
        st = PredictionStore(p)
    assert st.keys() == {"a"}
    with pytest.warns(TornLineWarning), st:  # opening for writing repairs the file
        st.append({"key": "c", "text": "z"})
    lines = p.read_text().splitlines()
    assert [json.loads(x)["key"] for x in lines] == ["a", "c"]


def test_last_record_without_newline_is_kept(tmp_path):
    import warnings

    p = tmp_path / "preds.jsonl"
    with PredictionStore(p) as st:
        st.append({"key": "a", "text": "x"})
    with open(p, "ab") as fh:
        fh.write(b'{"key": "b", "text": "y"}')  # whole record, newline never written
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing was dropped, so nothing to report
        st = PredictionStore(p)
        assert st.keys() == {"a", "b"} and st.get("b")["text"] == "y"
        with st:  # opening for writing ends the kept record's line before appending
            st.append({"key": "c", "text": "z"})
    assert p.read_bytes().endswith(b"\n")
    assert [json.loads(x)["key"] for x in p.read_text().splitlines()] == ["a", "b", "c"]
    assert PredictionStore(p).keys() == {"a", "b", "c"}


def test_only_record_without_newline_is_kept(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_bytes(b'{"key": "a", "text": "x"}')
    with PredictionStore(p) as st:
        assert st.keys() == {"a"}
        st.append({"key": "b"})
    assert [json.loads(x)["key"] for x in p.read_text().splitlines()] == ["a", "b"]


def test_torn_line_drop_reports_what_was_dropped(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_bytes(b'{"key": "a"}\n{"key": "b", "te')
    with pytest.warns(TornLineWarning, match=r"dropped an incomplete last line of 16 bytes .*'\{\"key\": \"b\", \"te'.*"
                                              r"1 complete records kept"):
        assert PredictionStore(p).keys() == {"a"}


def test_torn_line_with_newline_still_dropped(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_bytes(b'{"key": "a"}\n{"key": "b", "te\n')
    with pytest.warns(TornLineWarning):
        with PredictionStore(p) as st:
            assert st.keys() == {"a"}
    assert p.read_bytes() == b'{"key": "a"}\n'


def test_corrupt_middle_line_is_an_error(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_text('{"key": "a"}\nnot json\n{"key": "b"}\n')
    with pytest.raises(StoreError, match="line 2"):
        PredictionStore(p)


def _lines(*recs) -> str:
    return "".join(json.dumps(r) + "\n" for r in recs)


def test_a_later_failure_never_replaces_an_answer_and_a_rerun_does_not_ask_again(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_text(_lines({"key": "a", "request_id": "1::vlm", "text": "A"},
                        {"key": "a", "request_id": "1::vlm", "text": "", "error": "HTTP 500"}))
    st = PredictionStore(p)
    assert "a" in st and st.keys() == {"a"} and st.failed_keys() == set()
    assert st.get("a")["text"] == "A" and st.line("a") == 1
    with st:  # a failure appended after the answer (a second writer, a merged file) changes nothing
        st.append({"key": "a", "request_id": "1::vlm", "text": "", "error": "timeout"})
    assert PredictionStore(p).get("a")["text"] == "A"
    assert [r["text"] for r in read_records(p)] == ["A"]


def test_a_retried_failure_is_replaced_by_its_answer_and_identical_repeats_count_once(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_text(_lines({"key": "a", "text": "", "error": "HTTP 500"}, {"key": "a", "text": "A"},
                        {"key": "b", "text": "B"}, {"key": "b", "text": "B"}))
    from vlamb_nb.store import read_store

    st = PredictionStore(p)
    assert st.keys() == {"a", "b"} and len(st) == 2 and st.line("a") == 2 and st.line("b") == 3
    assert [(ln, r["text"]) for ln, r in read_store(p)] == [(2, "A"), (3, "B")]


def test_two_different_answers_to_one_request_are_refused_naming_file_request_and_lines(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_text(_lines({"key": "a", "request_id": "1::vlm", "text": "A"}, {"key": "b", "text": "B"},
                        {"key": "a", "request_id": "1::vlm", "text": "C"}))
    st = PredictionStore(p)  # a run may still resume it: the request is answered
    assert st.keys() == {"a", "b"} and len(st.conflicts()) == 1
    with pytest.raises(StoreError) as info:
        read_records(p)
    msg = str(info.value)
    for words in ("preds.jsonl", "'1::vlm'", "line 1", "line 3", "'A'", "'C'"):
        assert words in msg, msg


@pytest.mark.parametrize("where", ["middle", "last"])
def test_a_non_utf8_byte_is_an_error_naming_line_and_byte_offset(tmp_path, where):
    p = tmp_path / "preds.jsonl"
    bad = b'{"key": "b", "text": "\xff"}\n'
    good = b'{"key": "a", "text": "x"}\n'
    data = good + bad + (good.replace(b'"a"', b'"c"') if where == "middle" else b"")
    p.write_bytes(data)
    with pytest.raises(StoreError) as info:
        PredictionStore(p)  # the last line too: a byte that is not UTF-8 is damage, not an interrupted write
    msg, offset = str(info.value), data.index(b"\xff")
    assert "preds.jsonl" in msg and "line 2" in msg and f"byte offset {offset}" in msg, msg


def test_a_byte_order_mark_is_not_data(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + _lines({"key": "a", "text": "x"}).encode())
    assert [r["text"] for r in read_records(p)] == ["x"]


def test_second_writer_refused(tmp_path):
    p = tmp_path / "preds.jsonl"
    with PredictionStore(p):
        with pytest.raises(StoreError, match="another process"):
            PredictionStore(p).open()
    with PredictionStore(p) as st:  # released on close
        st.append({"key": "a"})


def test_second_writer_through_symlink_refused(tmp_path):
    p = tmp_path / "preds.jsonl"
    link = tmp_path / "alias.jsonl"
    link.symlink_to(p)
    linked_dir = tmp_path / "linked"
    linked_dir.symlink_to(tmp_path)
    (tmp_path / "sub").mkdir()
    with PredictionStore(p):
        for other in (link, linked_dir / "preds.jsonl", tmp_path / "sub" / ".." / "preds.jsonl"):
            with pytest.raises(StoreError, match="another process"):
                PredictionStore(other).open()
    with PredictionStore(link) as st:  # and the other way round
        st.append({"key": "a"})
        with pytest.raises(StoreError, match="another process"):
            PredictionStore(p).open()
    assert PredictionStore(p).keys() == {"a"}
    assert not (tmp_path / "alias.jsonl.lock").exists()


def test_symlink_to_missing_store_locks_its_target(tmp_path):
    target = tmp_path / "real" / "preds.jsonl"
    target.parent.mkdir()
    link = tmp_path / "alias.jsonl"
    link.symlink_to(target)  # dangling until the first write
    with PredictionStore(link) as st:
        st.append({"key": "a"})
        with pytest.raises(StoreError, match="another process"):
            PredictionStore(target).open()
    assert PredictionStore(target).keys() == {"a"}


def test_second_writer_refused_across_processes(tmp_path):
    p = tmp_path / "preds.jsonl"
    code = textwrap.dedent(f"""
        import time
        from vlamb_nb.store import PredictionStore
        with PredictionStore({str(p)!r}):
            print("locked", flush=True)
            time.sleep(30)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(StoreError, match=f"pid {proc.pid}"):
            PredictionStore(p).open()
    finally:
        proc.kill()
        proc.wait()
    with PredictionStore(p) as st:  # the kernel dropped the dead writer's lock
        st.append({"key": "after"})


WRITER = textwrap.dedent("""
    import sys, time
    from vlamb_nb.store import PredictionStore
    path, n = sys.argv[1], int(sys.argv[2])
    with PredictionStore(path) as st:
        done = st.keys()
        for i in range(n):
            k = f"req-{i}"
            if k in done:
                continue
            st.append({"key": k, "text": "x" * 2000, "i": i})
            print(k, flush=True)
            time.sleep(0.002)
""")


def test_sigkill_mid_run_loses_nothing_finished(tmp_path):
    p = tmp_path / "preds.jsonl"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(p), "400"], stdout=subprocess.PIPE, text=True)
    printed = []
    for line in proc.stdout:
        printed.append(line.strip())
        if len(printed) == 60:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    time.sleep(0.05)
    with _maybe_warns():
        survived = PredictionStore(p).keys()
    assert set(printed) <= survived  # every record reported finished is there
    subprocess.run([sys.executable, str(script), str(p), "400"], check=True, capture_output=True)
    keys = [json.loads(x)["key"] for x in p.read_text().splitlines()]
    assert sorted(keys) == sorted(f"req-{i}" for i in range(400))  # each exactly once


class _maybe_warns:
    """A torn line may or may not exist depending on where the kill landed."""

    def __enter__(self):
        import warnings

        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("ignore", TornLineWarning)

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)
