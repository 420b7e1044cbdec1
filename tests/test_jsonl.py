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
