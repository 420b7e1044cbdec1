import pytest

from vlamb_nb import boxes
from vlamb_nb.errors import SettingError


def test_iou_cases():
    assert boxes.iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert boxes.iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0  # disjoint
    assert boxes.iou((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0  # touching edge
    assert boxes.iou((0, 0, 10, 10), (2, 2, 4, 4)) == pytest.approx(4 / 100)  # contained
    assert boxes.iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(50 / 150)
    assert boxes.iou((5, 5, 5, 5), (0, 0, 10, 10)) == 0.0  # zero area
    assert boxes.iou((5, 5, 5, 5), (5, 5, 5, 5)) == 0.0  # union 0
    # no +1 pixel convention: 1-pixel offsets do not change areas
    assert boxes.iou((0, 0, 2, 2), (1, 1, 3, 3)) == pytest.approx(1 / 7)


def test_swapped_corners_sorted_before_iou():
    b = boxes.to_abs_xyxy((10, 10, 0, 0), 100, 100)
    assert b == (0, 0, 10, 10)
    # iou itself takes xyxy as given: a swapped box has no area
    assert boxes.iou((10, 10, 0, 0), (0, 0, 10, 10)) == 0.0


def test_formats_and_clip():
    assert boxes.to_abs_xyxy((100, 200, 500, 1000), 640, 480, "norm_1000_xyxy") == (64, 96, 320, 480)
    assert boxes.to_abs_xyxy((0.5, 0.5, 1.2, 0.75), 200, 100, "norm_1_xyxy") == (100, 50, 200, 75)  # clipped
    assert boxes.to_abs_xyxy((10, 20, 30, 40), 640, 480, "abs_xywh") == (10, 20, 40, 60)
    assert boxes.to_abs_xyxy((-5, -5, 700, 500), 640, 480) == (0, 0, 640, 480)
    assert boxes.to_abs_xyxy((-5, -5, 700, 500), 640, 480, do_clip=False) == (-5, -5, 700, 500)


def test_round_trip_all_formats():
    b = (12.0, 30.0, 200.0, 150.0)
    for fmt in boxes.FORMATS:
        back = boxes.to_abs_xyxy(boxes.from_abs_xyxy(b, 320, 240, fmt), 320, 240, fmt)
        assert back == pytest.approx(b), fmt


def test_rescale_resized_to_original():
    # a box in a 1 092 x 812 processor image mapped back to a 1 100 x 820 original
    assert boxes.rescale((546, 406, 1092, 812), (1092, 812), (1100, 820)) == pytest.approx((550, 410, 1100, 820))


def test_bad_input():
    with pytest.raises(SettingError):
        boxes.to_abs_xyxy((0, 0, 1, 1), 10, 10, "yxyx")
    with pytest.raises(ValueError, match="4 numbers"):
        boxes.iou((0, 0, 1), (0, 0, 1, 1))
    with pytest.raises(ValueError, match="numbers"):
        boxes.iou(("a", 0, 1, 1), (0, 0, 1, 1))
