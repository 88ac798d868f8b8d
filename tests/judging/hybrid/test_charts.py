"""The budget charts draw every value where it is: the axis widens, it never clamps."""

from judging.hybrid.charts import lines


def test_it_widens_the_axis_to_a_coverage_below_its_floor_instead_of_clamping_it():
    chart = lines({"ppi++": [(10.0, 0.62), (50.0, 0.95)]}, y_min=0.8, y_max=1.0, marks=(0.95,))

    ys = [float(p.split(",")[1]) for p in chart["series"][0]["points"].split()]
    assert ys[0] == chart["bottom"]  # 0.62 is the axis' new floor, not drawn at 0.80
    assert chart["yticks"][0]["label"] == "0.62"
    assert chart["top"] < ys[1] < ys[0]


def test_it_keeps_the_asked_range_when_every_value_lies_inside_it():
    chart = lines({"classical": [(10.0, 0.9), (20.0, 0.95)]}, y_min=0.8, y_max=1.0)

    assert [t["label"] for t in chart["yticks"]] == ["0.8", "0.85", "0.9", "0.95", "1"]
