import pytest

from vlamb_nb.errors import DataError
from vlamb_nb.jsonl import iter_jsonl


def test_records_with_line_numbers_skipping_blank_lines(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert list(iter_jsonl(p)) == [(1, {"a": 1}), (3, {"a": 2})]


@pytest.mark.parametrize("text, match", [('{"a": 1}\n{"a": \n', r"row 2.*not valid JSON"),
                                         ('{"a": 1}\n[1, 2]\n', r"row 2.*JSON object")])
def test_bad_lines_name_file_and_line(tmp_path, text, match):
    p = tmp_path / "b.jsonl"
    p.write_text(text)
    with pytest.raises(DataError, match=match):
        list(iter_jsonl(p))


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="not found"):
        list(iter_jsonl(tmp_path / "none.jsonl"))


def test_a_non_utf8_byte_names_its_line_and_byte_offset(tmp_path):
    from vlamb_nb.jsonl import read_json

    data = b'[\n  {"a": 1},\n  {"a": "x\xe9y"}\n]\n'  # a Latin-1 byte in a UTF-8 file
    p = tmp_path / "c.json"
    p.write_bytes(data)
    with pytest.raises(DataError) as e:
        read_json(p)
    msg, at = str(e.value), data.index(b"\xe9")
    assert "c.json, line 3" in msg and f"byte offset {at} " in msg and "byte 11 of the line" in msg, msg
    p.write_bytes(b"\xef\xbb\xbf" + data)  # behind a byte-order mark the offset still counts from the file's start
    with pytest.raises(DataError, match=f"line 3: .*byte offset {at + 3} "):
        read_json(p)


def test_a_byte_order_mark_is_not_data(tmp_path):
    from vlamb_nb.jsonl import read_csv, read_json

    (tmp_path / "a.jsonl").write_bytes(b'\xef\xbb\xbf{"a": 1}\n')
    assert list(iter_jsonl(tmp_path / "a.jsonl")) == [(1, {"a": 1})]
    (tmp_path / "a.json").write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_json(tmp_path / "a.json") == {"a": 1}
    (tmp_path / "a.csv").write_bytes(b"\xef\xbb\xbfid,x\n1,2\n")
    assert list(read_csv(tmp_path / "a.csv").columns) == ["id", "x"]


def test_a_csv_with_only_its_header_is_an_error_unless_allowed(tmp_path):
    from vlamb_nb.jsonl import read_csv

    (tmp_path / "h.csv").write_text("id,label\n")
    with pytest.raises(DataError, match=r"h\.csv: .*header but no rows"):
        read_csv(tmp_path / "h.csv")
    assert read_csv(tmp_path / "h.csv", allow_empty=True).empty
